/** `memcached-operator rbac`: prints the operator's ClusterRole, generated from the chart's declared kinds. */
import { resolve } from 'node:path'
import { operatorClusterRoleYaml } from '../api/rbac.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import type { CliIO } from './io.ts'

/** Runs `rbac`; returns the exit code. */
export function runRbac(opts: { chart?: string }, io: CliIO): number {
  const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
  io.stdout(operatorClusterRoleYaml(chart))
  return 0
}
