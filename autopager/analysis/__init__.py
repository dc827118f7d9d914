"""Reading studies back: the study result over the table, its summary, the report, the Optuna mirror and the
machine table. Uses the tuner's table and the layers below it."""
