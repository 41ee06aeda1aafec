"""Probe sweeps: ib_write_bw pairs and nccl-tests, planned, run (lab, SSH, Slurm), stored and shown."""
