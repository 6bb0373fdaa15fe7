"""The evaluation-batch planner (``acmemodel evalplan``): when do a checkpoint's evaluation trials
finish, coupled to or decoupled from training.

* :mod:`.inputs` — the batch, datasets, hardware and packing rules;
* :mod:`.schedule` — the packing of trials onto nodes and the two schedules;
* :mod:`.plan` — ``EvalPlanConfig``, the plan and its feedback delay inside a cluster plan.
"""
