"""GPU parity of a migration: a driver generated from the analysis calls every migrated entry
point of the original and the migrated library with the same inputs; outputs are compared byte
for byte (`codemod parity generate|run`, docs/parity.md)."""
