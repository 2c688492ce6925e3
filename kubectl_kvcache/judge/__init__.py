"""Pure judgement: records in, verdicts out (verify, rollout, setting, recover's plan, checks/):
no requests, no files, no printing."""
