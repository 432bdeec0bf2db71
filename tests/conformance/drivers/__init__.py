"""One SourceDriver per connector the conformance suite covers."""
