"""``ckptconform bench``: a target's throughput and costs side by side with raw fsspec and the
disk. ``command`` is the command line; ``measure`` times the interleaved figures, ``rss`` the
peak memory of one stream, ``suite_time`` the suite's wall time, ``peer`` Apache Flink's own
streams in the same run; ``stats`` summarizes, ``goals`` holds the figures against their
targets, ``output`` shows them and ``readme`` writes the README's block."""
