"""A folder of Parquet, JSON or CSV files as a source (``fw.from_files``): see ``source``."""
