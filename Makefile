# The two commands of the contract: `make demo` and `make test`. Both set everything up first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SYSTEM_STAMP := $(VENV)/.system

.PHONY: demo test check lint typecheck pytest lab bench vsix site clean system eval screenshots

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The tests pin torch to the CPU wheel; the user-facing extra "torch" accepts the user's own torch, and
	# an unpinned torch would pull a multi-GB CUDA build here.
	# "lab": HF Trainer, Accelerate, Lightning and DeepSpeed for the lab's framework cases and the callbacks' tests;
	# "fleet": Ray, for the fleet's Ray backend test.
	$(BIN)/python -m pip install --quiet -e '.[all,test,lab,fleet]' 'torch==2.13.0'
	touch $@

# Debian packages the tests use, each installed only when missing: ripgrep (the benchmark's peer),
# chromium (site and web tests in a real browser), postgresql (the web history on a real server).
$(SYSTEM_STAMP): | $(STAMP)
	@command -v rg >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep; \
	  else echo "ripgrep missing: run 'sudo apt-get install ripgrep'"; exit 1; fi; }
	bash scripts/install-chromium.sh
	bash scripts/install-postgres.sh
	touch $@

# The official SARIF 2.1.0 schema (OASIS; shipped by Microsoft's @microsoft/jest-sarif package) for the
# tests that validate --format sarif. Fetched once from the npm registry into the venv.
SARIF_SCHEMA := $(VENV)/share/sarif-2.1.0-rtm.5.json
$(SARIF_SCHEMA): | $(STAMP)
	mkdir -p $(VENV)/share/npm-pack
	cd $(VENV)/share/npm-pack && npm pack --silent @microsoft/jest-sarif@1.0.0-beta.0 >/dev/null
	tar -xzf $(VENV)/share/npm-pack/microsoft-jest-sarif-1.0.0-beta.0.tgz -C $(VENV)/share/npm-pack package/lib/schemas/sarif-2.1.0-rtm.5.json
	mv $(VENV)/share/npm-pack/package/lib/schemas/sarif-2.1.0-rtm.5.json $@

system: $(SYSTEM_STAMP)

demo: $(STAMP)
	$(BIN)/trainmedic diagnose examples/ddp-worker-killed/ ; test $$? -le 1

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) $(SYSTEM_STAMP) $(SARIF_SCHEMA)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

# (`make eval`'s check runs inside pytest: tests/test_eval.py fails unless docs/accuracy.md and corpus/eval/
# are exactly what `make eval` writes now, which a worse figure cannot be without ACCEPT=1.)
test: lint typecheck pytest

# The inner loop: lint, types and the fast tests, no browser, database, lab or slow test (< 2 min).
check: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 -m "not slow and not lab and not browser and not database"

# Accuracy on the real-log corpus: writes docs/accuracy.md and corpus/eval/, fails when a committed
# figure got worse (ACCEPT=1 takes the new figures; CALIBRATE=1 re-measures each cause's precision on dev).
eval: $(STAMP)
	$(BIN)/python -m trainmedic.evaluate $(if $(ACCEPT),--accept,) $(if $(CALIBRATE),--calibrate --accept,)
	$(if $(CALIBRATE),$(BIN)/python scripts/readme_demo.py,)  # the README quotes the demo's confidence

# The screenshots under docs/: the terminal report at 80 columns, the web diagnosis and a cause page at
# 390 and 1280 px, the timeline of a 200 MB log.
screenshots: $(STAMP)
	TRAINMEDIC_DOCS_SHOTS=1 $(BIN)/python -m pytest -q tests/web/test_browser.py -k "sideways or large_file or fleet_page"
	TRAINMEDIC_DOCS_SHOTS=1 $(BIN)/python -m pytest -q tests/cli/test_reports.py -k screenshot

lab: $(STAMP)
	$(BIN)/python scripts/capture_lab.py

bench: $(STAMP) $(SYSTEM_STAMP)
	$(BIN)/python benchmarks/bench.py --size 1GiB
	$(BIN)/python benchmarks/bench.py --size 1GiB --profile dense
	$(BIN)/python benchmarks/bench_run.py --size 1GiB

# The VS Code extension: editors/vscode/trainmedic-<version>.vsix (needs Node.js 20+ and npm, once).
vsix:
	scripts/build-vsix.sh

# The static encyclopedia, from the same library files as the matcher.
site: $(STAMP)
	$(BIN)/trainmedic site build site-out

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache site-out
	rm -rf editors/vscode/node_modules editors/vscode/out editors/vscode/*.vsix
