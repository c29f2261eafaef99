"""The machinery both vendor mirrors (`npurt.rknn`, `npurt.qnn`) and their C face share: handle tables whose
freed handles stay recognisable for a while (`handles`), and the boundary that turns a runtime failure into a
vendor status and a log line (`boundary`). Each mirror keeps its own status table and wording; the kit holds only
the rules that are the same for both. Layer: above `runtime`, below `rknn`."""
