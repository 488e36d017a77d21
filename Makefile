# treino: `make demo` and `make test` are the two commands a new machine needs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch lies on these machines' disk; an unpinned torch downloads a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0
TRANSFORMERS_PIN := transformers==5.24.0

.PHONY: venv demo test lint bench clean screenshots mutate

$(BIN)/treino: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH_PIN) $(TRANSFORMERS_PIN)
	$(BIN)/pip install -q -e '.[all,dev]'  # every extra: the demo runs the server, the tests everything
	touch $(BIN)/treino

venv: $(BIN)/treino

demo: venv
	@echo "== Llama-3-8B full fine-tune on one NVIDIA L4 (24 GB) =="
	@$(BIN)/treino plan train --model llama-3-8b --gpu l4 --micro-batch 1 --seq-len 4096 --precision bf16-true \
		|| echo "(treino exits 3 when the plan does not fit)"
	@echo
	@echo "== the same job on one NVIDIA H200 SXM (141 GB) =="
	@$(BIN)/treino plan train --model llama-3-8b --gpu h200-sxm --micro-batch 1 --seq-len 4096 --precision bf16-true
	@echo
	@echo "== which server: Llama-3-8B on 2 B tokens within 3 days, data resident in Brazil =="
	@$(BIN)/treino recommend --model llama-3-8b --tokens 2e9 --deadline 3d --residency BR
	@echo
	@echo "== treino server on 2 CPU slots: the example DDP job, submitted, followed to its last checkpoint =="
	@$(BIN)/python scripts/demo_server.py
	@echo
	@echo "== LGPD: register customer data, train, refuse Miami, erase a customer, retrain, verify the audit =="
	@$(BIN)/python scripts/demo_lgpd.py
	@echo
	@echo "== the dashboard =="
	@$(BIN)/python scripts/demo_dashboard.py

test: venv
	@# Slurm 22.05 (and slurmdbd, MariaDB) from Debian for the cluster-mode tests (tests/cluster); as root only, else
	@# they skip and say why
	@$(BIN)/python scripts/local_slurm.py install --if-root
	@# PostgreSQL 15 from Debian for the tests' [postgresql] variants; as root only, else they skip and say why
	@$(BIN)/python scripts/local_postgres.py install --if-root
	@# two workers (pytest-xdist): most tests wait on real servers and jobs. Each file stays on one worker (its
	@# module-scoped servers and Slurm cluster start once); tests/cluster's two clusters use their own ports. The
	@# 30 slowest tests are listed at the end: the whole suite must stay under 20 minutes on two cores
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=30

# Mutation testing (scripts/mutate.py, mutmut): each small change to a module users trust (the planner's memory and
# performance models, the audit chain, the CPF scanner, the scheduler) must make one of its tests fail; a score
# table per module at the end (target 90 %). A whole module takes from minutes (cpf) to hours (memory) on two cores;
# mutmut keeps its results in .mutate/ and, run again, tests only the mutants of functions that changed. E.g.
#   make mutate TARGETS=cpf
#   make mutate TARGETS=memory MUTANTS='treino.plan.memory.x__adamw_8bit_state_bytes* treino.plan.memory.x__post_core_params*'
# CHILDREN=1 tests one mutant at a time (default: one per core), leaving a core to other work.
TARGETS ?= memory,performance,audit,cpf,scheduler
MUTANTS ?=
CHILDREN ?=
mutate: venv
	$(BIN)/python scripts/mutate.py --targets '$(TARGETS)' $(if $(MUTANTS),--mutants '$(MUTANTS)') \
		$(if $(CHILDREN),--max-children $(CHILDREN))

lint: venv
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

bench: venv
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/kernel_accuracy.py --quick
	$(BIN)/python benchmarks/recompute_window.py
	$(BIN)/python benchmarks/fabric_validation.py
	$(BIN)/python benchmarks/server_bench.py
	$(BIN)/python benchmarks/audit_bench.py
	$(BIN)/python benchmarks/erasure_bench.py
	$(BIN)/python benchmarks/sisa_bench.py
	$(BIN)/python benchmarks/web_bench.py
	$(BIN)/python benchmarks/slurm_bench.py
	$(BIN)/python benchmarks/trackers_bench.py
	$(BIN)/python benchmarks/sharded_bench.py
	$(BIN)/python benchmarks/sharded_memory_bench.py
	$(BIN)/python benchmarks/install_size.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

screenshots: venv
	$(BIN)/python scripts/screenshots.py
