"""Stage 4, write: the patch, its report and manifest, the journaled all-or-nothing write, migrated trees."""
