"""``ckptconform budget``: a checkpoint workload's S3 requests held against request budgets.
``command`` is the command line; ``phases`` runs the workload phase by phase and counts each
phase's requests on the ledger; ``limits`` reads the budgets and holds the figures against
them and a baseline; ``output`` shows the phase table and the plot."""
