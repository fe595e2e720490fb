// One function per subcommand; each parses its own arguments (cli_args.h) and returns the exit code.
#pragma once

namespace stallscope::cli {

int run_sample(int argc, char** argv, int first);     // stallscope [--json] [--interval-seconds N ...]
int run_record(int argc, char** argv, int first);     // stallscope record ...   (the per-step helper)
int run_replay(int argc, char** argv, int first);     // stallscope replay TIMELINE...
int run_report(int argc, char** argv, int first);     // stallscope report DIR|TIMELINE...
int run_summarize(int argc, char** argv, int first);  // stallscope summarize DIR (epilog)
int run_jobs(int argc, char** argv, int first);       // stallscope jobs (verdicts from sacct)
int run_html(int argc, char** argv, int first);       // stallscope html DIR|TIMELINE... -o FILE
int run_compare(int argc, char** argv, int first);    // stallscope compare A B
int run_nodes(int argc, char** argv, int first);      // stallscope nodes (which nodes hurt jobs, from sacct)
// stallscope nvml-capture: this node's NVML answers as a fake-NVML fixture
int run_nvml_capture(int argc, char** argv, int first);
int run_watch(int argc, char** argv, int first);  // stallscope watch JOBID|DIR (a running job, live)
// stallscope export TIMELINE: the timeline as v1 JSON lines on stdout (timeline/timeline_export.h)
int run_export(int argc, char** argv, int first);

}  // namespace stallscope::cli
