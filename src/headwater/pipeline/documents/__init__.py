"""The pipeline's document path: MongoDB change events into Delta tables (SCD1, SCD2,
changelog), with columns inferred from the documents' Extended JSON."""
