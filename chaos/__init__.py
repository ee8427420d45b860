"""`make chaos`: Sluice queries killed, failed and starved at random moments must still deliver every
record exactly once.

- `scenarios` says what each scenario reads and what it must deliver;
- `driver` is one driver process of a scenario's query (killed with SIGKILL, then started again
  from the checkpoint);
- `faults` are the ways a run is disturbed (driver kills, a broker restart, records deleted);
- `run` runs the scenarios, checks the sinks and writes `bench/results/chaos.json`.
"""
