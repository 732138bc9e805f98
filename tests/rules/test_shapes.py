SPECS = []
NONDIFF = []
