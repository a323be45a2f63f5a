// The Flink side of `python -m benchmarks --against-flink`: Flink's own FLIP-380 operators
// (fullWindowPartition() then sortPartition / mapPartition / aggregate / reduce) over the CSV
// files the orchestrator wrote (id,key,price,qty; one file = one split = one subtask).
//
//   java -cp <pyflink/lib/*>:<this jar> FullWindowBench serve <csv dir> <parallelism>
//       starts a MiniCluster once, then for every line "run <case>" on stdin runs that job on it
//       and prints "seconds <s>" (or "stuck", or "error <exception>") on stdout; "quit" (or end of input) stops.
//   java -cp ... FullWindowBench cold
//       a fresh process: a local environment sorts 1,000 generated rows and collects them.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.MapPartitionFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.operators.Order;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.reader.TextLineInputFormat;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

public final class FullWindowBench {
    static final long STUCK_AFTER_S = Long.getLong("stuckAfterSeconds", 60);

    /** id, key = id % 1000, price, qty = id % 7. */
    public static final class Row extends Tuple4<Long, Long, Double, Integer> {
        public Row() {}

        Row(long id, long key, double price, int qty) {
            super(id, key, price, qty);
        }
    }

    public static final class Parse implements MapFunction<String, Row> {
        @Override
        public Row map(String line) {
            String[] f = line.split(",");
            return new Row(Long.parseLong(f[0]), Long.parseLong(f[1]), Double.parseDouble(f[2]), Integer.parseInt(f[3]));
        }
    }

    /** (id, price * qty) for every record, as fw-magics' per_record. */
    public static final class PerRecord implements MapPartitionFunction<Row, Tuple2<Long, Double>> {
        @Override
        public void mapPartition(Iterable<Row> rows, Collector<Tuple2<Long, Double>> out) {
            for (Row r : rows) {
                out.collect(Tuple2.of(r.f0, r.f2 * r.f3));
            }
        }
    }

    /** Sum of price and count, as fw-magics' Revenue. */
    public static final class Revenue implements AggregateFunction<Row, Tuple2<Double, Long>, Tuple2<Double, Long>> {
        @Override
        public Tuple2<Double, Long> createAccumulator() {
            return Tuple2.of(0.0, 0L);
        }

        @Override
        public Tuple2<Double, Long> add(Row r, Tuple2<Double, Long> acc) {
            acc.f0 += r.f2;
            acc.f1 += 1;
            return acc;
        }

        @Override
        public Tuple2<Double, Long> getResult(Tuple2<Double, Long> acc) {
            return acc;
        }

        @Override
        public Tuple2<Double, Long> merge(Tuple2<Double, Long> a, Tuple2<Double, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /** The record of the higher price, as fw-magics' bigger. */
    public static final class Bigger implements ReduceFunction<Row> {
        @Override
        public Row reduce(Row a, Row b) {
            return a.f2 >= b.f2 ? a : b;
        }
    }

    public static final class Key implements KeySelector<Row, Long> {
        @Override
        public Long getKey(Row r) {
            return r.f1;
        }
    }

    static StreamExecutionEnvironment batchEnvironment(int parallelism) {
        Configuration conf = new Configuration();
        conf.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.BATCH);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        return env;
    }

    static void build(StreamExecutionEnvironment env, String dir, String name) {
        FileSource<String> source = FileSource.forRecordStreamFormat(new TextLineInputFormat(), new Path(dir)).build();
        DataStream<Row> rows = env.fromSource(source, WatermarkStrategy.noWatermarks(), "csv").map(new Parse());
        DataStream<?> out;
        switch (name) {
            case "scan":
                out = rows;
                break;
            case "sort_partition":
                out = rows.fullWindowPartition().sortPartition(2, Order.ASCENDING);
                break;
            case "map_partition":
                out = rows.fullWindowPartition().mapPartition(new PerRecord());
                break;
            case "aggregate":
                out = rows.fullWindowPartition().aggregate(new Revenue());
                break;
            case "keyed_reduce":
                out = rows.keyBy(new Key()).fullWindowPartition().reduce(new Bigger());
                break;
            default:
                throw new IllegalArgumentException("unknown case " + name);
        }
        sinkToDiscarding(out);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static void sinkToDiscarding(DataStream out) {
        out.sinkTo(new DiscardingSink<>());
    }

    static void serve(String dir, int parallelism) throws Exception {
        // spare slots (a finished job's are freed asynchronously), 128 MiB of managed memory each (what a
        // local environment gives a slot), and network memory for the batch shuffles: with the local
        // default (64 MiB) a subtask of a mapPartition can wait forever for a buffer
        int slots = 4 * parallelism;
        Configuration conf = new Configuration();
        conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.ofMebiBytes(128L * slots));
        conf.set(TaskManagerOptions.NETWORK_MEMORY_MIN, MemorySize.ofMebiBytes(512));
        conf.set(TaskManagerOptions.NETWORK_MEMORY_MAX, MemorySize.ofMebiBytes(512));
        MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(slots).build());
        cluster.start();
        try {
            StreamExecutionEnvironment env = batchEnvironment(parallelism);
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            System.out.println("ready");
            System.out.flush();
            for (String line = in.readLine(); line != null && !line.equals("quit"); line = in.readLine()) {
                long started = System.nanoTime();
                try {
                    build(env, dir, line.replaceFirst("^run ", "").trim());
                    JobGraph job = env.getStreamGraph().getJobGraph();
                    cluster.submitJob(job).get();
                    try {
                        // Flink 2.3's mapPartition deadlocks now and then (its task thread waits for a
                        // sort-merge shuffle buffer at the end of input while the function's thread waits
                        // for records): such a run is cancelled and reported as "stuck", to be run again
                        JobResult result = cluster.requestJobResult(job.getJobID()).get(STUCK_AFTER_S, TimeUnit.SECONDS);
                        result.toJobExecutionResult(FullWindowBench.class.getClassLoader());
                        System.out.println("seconds " + (System.nanoTime() - started) / 1e9);
                    } catch (TimeoutException e) {
                        cluster.cancelJob(job.getJobID()).get();
                        System.out.println("stuck");
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                    System.out.println("error " + e);
                }
                System.out.flush();
            }
        } finally {
            cluster.close();
        }
    }

    static void cold() throws Exception {
        StreamExecutionEnvironment env = batchEnvironment(1);
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < 1000; id++) {
            rows.add(new Row(id, id % 1000, (id * 7919 % 1000) / 10.0, (int) (id % 7)));
        }
        int n = 0;
        try (CloseableIterator<Row> it = env.fromData(rows).fullWindowPartition()
                .sortPartition(2, Order.ASCENDING).executeAndCollect()) {
            while (it.hasNext()) {
                it.next();
                n++;
            }
        }
        System.out.println("rows " + n);
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("cold")) {
            cold();
        } else if (args.length == 3 && args[0].equals("serve")) {
            serve(args[1], Integer.parseInt(args[2]));
        } else {
            System.err.println("usage: FullWindowBench serve <csv dir> <parallelism> | cold");
            System.exit(2);
        }
    }
}
