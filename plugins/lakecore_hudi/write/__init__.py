"""Writing Hudi tables (table versions 6 and 8, CoW and MoR) without a JVM.

``create`` makes a table; ``writer.HudiWriter`` plans each write (its files are written under
a requested + inflight instant); ``commit`` completes it after checking for conflicting
concurrent writers, both under the table lock (``lock``); ``rollback`` undoes writes whose
writer died (``heartbeat``); ``compaction`` and ``clean`` are the MoR and file upkeep.
"""
