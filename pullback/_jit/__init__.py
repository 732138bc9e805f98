"""``pb.jit``: tracing, code generation, the passes over the program, the watch of
captured state and the jitted object. Private: users import ``pb.jit``."""
