"""``pb.jit``, private (users import ``pb.jit``): trace.py records a call, program.py holds
what it recorded, passes.py and passes_memory.py rewrite it, emit.py writes and compiles
its source, scan.py, watch.py and reading.py watch the state it captured, and jitted.py
keys the calls and replays their programs."""
