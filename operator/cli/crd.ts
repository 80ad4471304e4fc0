/**
 * `memcached-operator crd`: prints the CustomResourceDefinition of Memcached, generated from the
 * chart's schema, or (`--kind ChartRevision`, `--kind Rollout`) the fixed one of ChartRevision or Rollout.
 */
import { resolve } from 'node:path'
import { chartRevisionCRD } from '../api/chart-revision-crd.ts'
import { ROLLOUT_KIND, rolloutCRD } from '../api/rollout-crd.ts'
import { memcachedCRD } from '../api/crd.ts'
import { REVISION_KIND } from '../api/chart-revision.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import { yamlText } from '../render/manifest.ts'
import type { CliIO } from './io.ts'

/** Runs `crd`; returns the exit code. */
export function runCrd(opts: { chart?: string; kind?: string }, io: CliIO): number {
  if (opts.kind === REVISION_KIND) {
    io.stdout(yamlText(chartRevisionCRD()))
    return 0
  }
  if (opts.kind === ROLLOUT_KIND) {
    io.stdout(yamlText(rolloutCRD()))
    return 0
  }
  const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
  io.stdout(yamlText(memcachedCRD(chart)))
  return 0
}
