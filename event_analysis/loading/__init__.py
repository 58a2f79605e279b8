"""Reading histories into frames: the schema, the line readers, the loaders (JSON lines, change-only histories,
partitioned Parquet, AWX jobs and ansible-runner artifacts) and where the samples are."""
