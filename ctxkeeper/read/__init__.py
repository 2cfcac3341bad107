"""The read path: ranking (rank, textindex, coverage), queries, the summary, drift, the quality
scan, and renderings (render, framed, projections)."""
