/** `memcached-operator crd`: prints the CustomResourceDefinition generated from the chart's schema. */
import { resolve } from 'node:path'
import { memcachedCRD } from '../api/crd.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import { yamlText } from '../render/manifest.ts'
import type { CliIO } from './io.ts'

/** Runs `crd`; returns the exit code. */
export function runCrd(opts: { chart?: string }, io: CliIO): number {
  const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
  io.stdout(yamlText(memcachedCRD(chart)))
  return 0
}
