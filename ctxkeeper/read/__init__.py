"""The read path: ranking, the text index, queries, the summary and how entries are rendered."""
