"""Discovery: the fabric from a source, its snapshots, diffs, ibdiagnet runs, cables and cable plans."""
