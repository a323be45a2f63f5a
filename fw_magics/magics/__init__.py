"""The notebook face of fw-magics: ``%%fullwindow`` and ``%fullwindow`` (``%load_ext fw_magics``).

grammar.py parses a magic's line into a Command (pure, no Spark; its words, shared with
%%fwstream's stream_grammar.py, are words.py's); build.py turns a Command and
its input into a DataStream with the Python API and writes what ``--explain`` shows;
the stream previews itself (fw_magics.datastream.preview, one Spark job); tracebacks.py cuts the user's errors to
their own frames; magic.py is the IPython side.
"""
