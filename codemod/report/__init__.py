"""Reports of an analysis: terminal text, JSON, HTML."""
