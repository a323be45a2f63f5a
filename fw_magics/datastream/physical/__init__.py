"""How the DataStream API's operations run on Spark: the code Spark's Python workers run for each
operator (``workers``; they import only this sub-package, never the API), the Arrow UDF calls that carry
it (``arrow_calls``), the optimized plan read back for a stream's partitions (``planned``) and where a
key lands among them (``layout``)."""
