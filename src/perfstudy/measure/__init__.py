"""The instruments and their readers: step-trace arithmetic, the profilers' control and raw
output, MindData's per-operator tables, the op timeline. May import common only."""
