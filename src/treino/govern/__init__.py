"""LGPD governance on the job server: people and access, sites and residency, datasets, audit, lineage, erasure."""
