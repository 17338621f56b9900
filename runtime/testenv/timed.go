package testenv

import "fmt"

// PythonTimed is Python code (top-level await allowed, as in a run) that runs
// stmt n times and prints three numbers, each divided by n: the wall time and
// the process's CPU time in microseconds, and how often its threads waited
// (voluntary context switches, from /proc on Linux; 0 elsewhere).
func PythonTimed(n int, stmt string) string {
	return fmt.Sprintf(`import glob, time
def waits():
    n = 0
    for t in glob.glob("/proc/self/task/*/status"):
        for line in open(t):
            if line.startswith("voluntary_ctxt_switches:"):
                n += int(line.split()[1])
    return n
start, cpu, w = time.perf_counter(), time.process_time(), waits()
for i in range(%d):
    %s
print((time.perf_counter() - start) * 1e6 / %[1]d, (time.process_time() - cpu) * 1e6 / %[1]d, (waits() - w) / %[1]d)
`, n, stmt)
}
