"""`gpu-admission audit`: list what a live cluster runs, evaluate it with the webhook's engine and
lookups, and report it as a table, JSON or PolicyReports."""
