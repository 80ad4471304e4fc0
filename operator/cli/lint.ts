/**
 * `memcached-operator lint`: the chart's schema is valid and structural (it becomes the CRD), its
 * templates compile, its declared kinds (kinds.yaml) are namespaced, and minimal values and the
 * sample CRs render into valid objects of declared kinds.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { structuralProblems } from '../api/crd.ts'
import { parseMemcacheds } from '../api/memcached.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import { renderInstance, type RenderInput } from '../render/engine.ts'
import { RenderError } from '../render/errors.ts'
import type { ChartKind } from '../render/kinds.ts'
import { builtinSpecs } from '../sandbox/registry.ts'
import type { CliIO } from './io.ts'
import { readInputs } from './render.ts'

/** The sample CRs shipped beside the chart: kustomize/samples of the checkout. */
export const SAMPLES_DIR = resolve(DEFAULT_CHART_DIR, '..', '..', 'kustomize', 'samples')

/** Runs `lint`; returns the exit code (1 when the chart has problems). */
export async function runLint(opts: { chart?: string; filename: string[] }, io: CliIO): Promise<number> {
  const dir = opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR
  const problems: string[] = []
  let chart
  try {
    chart = loadChart(dir, true)
  } catch (err) {
    if (!(err instanceof RenderError)) throw err
    io.stderr(`lint: ${dir}:\n${err.problems.map((p) => `  - ${p}`).join('\n')}\n`)
    return 1
  }
  if (!chart.description) problems.push('Chart.yaml: description is empty')
  problems.push(...structuralProblems(chart.schema).map((p) => `values.schema.json: ${p}`))
  const scopes = kindScopes(chart.kinds)
  problems.push(...scopes.problems)
  const inputs: { label: string; input: RenderInput }[] = [
    { label: 'minimal values (size 1)', input: { name: 'lint', namespace: 'default', spec: { size: 1 } } },
    { label: 'minimal values (size 3)', input: { name: 'lint', namespace: 'default', spec: { size: 3 } } },
    // Each platform's values (platforms/<name>.yaml) go through the schema and the templates too.
    ...Object.keys(chart.platforms).map((platform) => ({ label: `minimal values on platform ${platform} (size 3)`, input: { name: 'lint', namespace: 'default', spec: { size: 3 }, platform } })),
  ]
  const files = opts.filename.length > 0 ? opts.filename : defaultSamples(dir)
  for (const f of files.length > 0 ? await readInputs(files, io) : []) {
    try {
      for (const cr of parseMemcacheds(f.text, f.source)) {
        inputs.push({ label: `${f.source} (${cr.metadata.name})`, input: { name: cr.metadata.name, namespace: cr.metadata.namespace ?? 'default', spec: cr.spec ?? {} } })
      }
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      problems.push(...err.problems)
    }
  }
  let objects = 0
  for (const { label, input } of inputs) {
    try {
      objects += renderInstance(chart, input).objects.length
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      problems.push(...err.problems.map((p) => `${label}: ${p}`))
    }
  }
  if (problems.length > 0) {
    io.stderr(`lint: ${dir}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
    return 1
  }
  for (const k of scopes.unknown) io.stdout(`lint: kinds.yaml: ${k.apiVersion} ${k.kind} is not a built-in kind: the operator checks through discovery when it starts that the cluster serves it namespaced\n`)
  io.stdout(`lint: ${dir}: ok (${chart.templates.length} templates, ${chart.kinds.length} kinds, ${inputs.length} instances rendered into ${objects} objects)\n`)
  return 0
}

function defaultSamples(chartDir: string): string[] {
  if (chartDir !== DEFAULT_CHART_DIR || !existsSync(SAMPLES_DIR)) return []
  return readdirSync(SAMPLES_DIR)
    .filter((f) => f.startsWith('cache_') && f.endsWith('.yaml'))
    .sort()
    .map((f) => join(SAMPLES_DIR, f))
}

/**
 * Checks each declared kind against the built-in kinds the sandbox serves (as a v1.34 cluster
 * does): it must be namespaced, under its real resource name. A kind that is not built in (a CRD's)
 * cannot be known offline: it is returned in `unknown`, and the operator checks it at start.
 */
export function kindScopes(kinds: readonly ChartKind[]): { problems: string[]; unknown: ChartKind[] } {
  const problems: string[] = []
  const unknown: ChartKind[] = []
  kinds.forEach((k, i) => {
    const [group, version] = k.apiVersion.includes('/') ? k.apiVersion.split('/') : ['', k.apiVersion]
    const builtin = builtinSpecs.find((b) => b.group === group && b.version === version && b.kind === k.kind)
    const at = `kinds.yaml: kinds[${i}] (${k.apiVersion} ${k.kind})`
    if (!builtin) {
      const sameResource = builtinSpecs.find((b) => b.group === group && b.resource === k.resource)
      if (sameResource) problems.push(`${at}: resource ${k.resource} is of kind ${sameResource.kind}`)
      else unknown.push(k)
      return
    }
    if (!builtin.namespaced) problems.push(`${at}: cluster-scoped; a chart may declare only namespaced kinds (everything it renders lives in its Memcached's namespace)`)
    if (builtin.resource !== k.resource) problems.push(`${at}: resource is ${builtin.resource}, not ${k.resource}`)
  })
  return { problems, unknown }
}
