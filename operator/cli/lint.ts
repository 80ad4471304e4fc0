/**
 * `memcached-operator lint`: the chart's schema is valid and structural (it becomes the CRD), its
 * templates compile, its declared kinds (kinds.yaml) are namespaced, and minimal values (also on
 * each platform the chart has a `platforms/` file for), the chart's example values (`ci/*.yaml`), `--values` files and `-f` CRs render into objects of
 * declared kinds that a 1.34 API server would accept (check-objects.ts: types, undeclared fields,
 * validation).
 */
import { existsSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { structuralProblems } from '../api/crd.ts'
import { declarationLine, ruleDeclarationProblems } from '../kube/cel/declarations.ts'
import { parseMemcacheds } from '../api/memcached.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import { DeadlineExceeded, withDeadline } from '../render/deadline.ts'
import { renderInstance, templateRunning, type RenderInput } from '../render/engine.ts'
import { RenderError } from '../render/errors.ts'
import { OPERATOR_SPEC_FIELDS } from '../render/spec-fields.ts'
import { renderedProblems } from './check-objects.ts'
import { patchableProblems } from './lint-patchable.ts'
import { ruleDefaultProblems } from './lint-rule-defaults.ts'
import type { CliIO } from './io.ts'
import { kindScopes } from './kind-scopes.ts'
import { readInputs, readOverrides } from './render.ts'

/** The sample CRs shipped beside the bundled chart: kustomize/samples of the checkout. */
export const SAMPLES_DIR = resolve(DEFAULT_CHART_DIR, '..', '..', 'kustomize', 'samples')

/** A chart's example values: `ci/*.yaml`, as chart-testing (`ct lint`) lints a Helm chart with each. */
export const CI_DIR = 'ci'

/** The chart's example values files, sorted (chart-relative paths). */
function ciValues(chartDir: string): string[] {
  const dir = join(chartDir, CI_DIR)
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .map((f) => join(CI_DIR, f))
}

/** How long lint's renders may run, all together, before a template is taken for one that never ends. */
const LINT_DEADLINE_MS = 10_000

export interface LintOptions {
  chart?: string
  filename: string[]
  /** `--values FILE`, repeatable: each is one more instance, over minimal values. */
  values?: string[]
}

/** Runs `lint`; returns the exit code (1 when the chart has problems). */
export async function runLint(opts: LintOptions, io: CliIO): Promise<number> {
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
  problems.push(...operatorFieldProblems(chart.schema))
  problems.push(...patchableProblems(chart.kinds))
  // The CRD's x-kubernetes-validations are the schema's: a rule the API server would not compile is refused here.
  problems.push(...ruleDeclarationProblems(chart.schema, 'spec').map((p) => `values.schema.json: ${declarationLine(p)}`))
  const scopes = kindScopes(chart.kinds)
  problems.push(...scopes.problems)
  const minimal = (size: number) => ({ name: 'lint', namespace: 'default', spec: { size } })
  const platforms = Object.keys(chart.platforms).sort()
  const inputs: { label: string; input: RenderInput }[] = [
    { label: 'minimal values (size 1)', input: minimal(1) },
    { label: 'minimal values (size 3)', input: minimal(3) },
    // Each platform's values (platforms/<name>.yaml) go through the schema and the templates too.
    ...platforms.map((platform) => ({ label: `minimal values on platform ${platform} (size 3)`, input: { ...minimal(3), platform } })),
  ]
  // The chart's own examples (what a copy of the chart carries along), then the files given.
  const valuesFiles = [...ciValues(dir).map((f) => ({ label: f, path: join(dir, f) })), ...(opts.values ?? []).map((f) => ({ label: f, path: resolve(io.cwd, f) }))]
  for (const { label, path } of valuesFiles) {
    try {
      const [values] = readOverrides({ values: [path], set: [], setString: [] }, io)
      inputs.push({ label, input: { ...minimal(1), overrides: [values!] } })
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      problems.push(...err.problems.map((p) => p.replace(path, label)))
    }
  }
  for (const f of opts.filename.length > 0 ? await readInputs(opts.filename, io) : []) {
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
  let current = ''
  // A problem of the chart shows in every instance: said once, with the instances it was found in.
  const found = new Map<string, string[]>()
  try {
    withDeadline(LINT_DEADLINE_MS, () => {
      for (const { label, input } of inputs) {
        current = label
        for (const p of ruleDefaultProblems(chart, input)) found.set(p, [...(found.get(p) ?? []), label])
        try {
          const result = renderInstance(chart, input)
          objects += result.objects.length
          for (const p of renderedProblems(result.objects, result.sources)) found.set(p, [...(found.get(p) ?? []), label])
        } catch (err) {
          if (!(err instanceof RenderError)) throw err
          for (const p of err.problems) found.set(p, [...(found.get(p) ?? []), label])
        }
      }
    })
  } catch (err) {
    if (!(err instanceof DeadlineExceeded)) throw err
    problems.push(`${current}: ${templateRunning() ?? 'templates'}: ${err.message}`)
  }
  for (const [p, labels] of found) problems.push(`${labels.length === inputs.length && labels.length > 1 ? 'every instance' : labels.join(', ')}: ${p}`)
  if (problems.length > 0) {
    io.stderr(`lint: ${dir}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n${problems.map((p) => `  - ${p}`).join('\n')}\n`)
    return 1
  }
  // Notes, not problems: on stderr, so that stdout is the one line of the result.
  for (const k of scopes.unknown) io.stderr(`lint: note: kinds.yaml: ${k.apiVersion} ${k.kind} is not a built-in kind: the operator checks through discovery when it starts that the cluster serves it namespaced\n`)
  const ci = valuesFiles.length - (opts.values?.length ?? 0)
  io.stdout(`lint: ${dir}: ok (${chart.templates.length} templates, ${chart.kinds.length} kinds, ${inputs.length} instances rendered into ${objects} objects: minimal values${platforms.length > 0 ? ` (also on ${platforms.join(', ')})` : ''}, ${ci} ${CI_DIR}/ values file${ci === 1 ? '' : 's'}${opts.values?.length ? `, ${opts.values.length} --values` : ''}${opts.filename.length > 0 ? `, the CRs of ${opts.filename.length} -f` : ''})\n`)
  return 0
}


/** A value the chart declares under a name the operator reads itself (`overlays`): the CR could not set it. */
function operatorFieldProblems(schema: unknown): string[] {
  const props = (schema as { properties?: unknown } | undefined)?.properties
  if (typeof props !== 'object' || props === null) return []
  return Object.keys(OPERATOR_SPEC_FIELDS)
    .filter((k) => Object.hasOwn(props, k))
    .map((k) => `values.schema.json: properties.${k}: "${k}" is a field of the Memcached spec that the operator reads itself (see docs/chart-authoring.md); a value may not have that name`)
}
