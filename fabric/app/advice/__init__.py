"""Advice: recommendations, the subnet manager and adaptive routing as known, what-if estimates."""
