"""Debugging: where a NaN was born (``detect_anomaly``, and the provenance in a losscheck's
message), a picture of the recorded graph (``graph``), and what the graph keeps alive for
the backward pass (``memory_report``).

All of it works through one hook of the engine: the *watch*, which ``record`` hands every
node it makes.
"""

# watch.py: the watch, the user's line of a node, the checks for a NaN or an infinity
# anomaly.py: detect_anomaly, and the provenance of a non-finite loss
# picture.py: graph and Graph
# memory.py: memory_report and MemoryReport

from .anomaly import detect_anomaly
from .memory import MemoryReport, memory_report
from .picture import Graph, graph

__all__ = ["detect_anomaly", "graph", "Graph", "memory_report", "MemoryReport"]
