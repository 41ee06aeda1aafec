"""Store care: compaction, info, checks and repair of the store."""
