"""Two-way sync between a plain directory and a store (API lands with the mirror)."""
