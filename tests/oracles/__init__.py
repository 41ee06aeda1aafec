"""Oracles: the plain, slow readings of rules whose production code is fast (arrays, short cuts,
one pass over the text). Tests hold the production path equal to its oracle; the program never
runs an oracle."""
