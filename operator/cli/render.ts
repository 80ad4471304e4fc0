/**
 * `memcached-operator render`: what `helm template` is to a chart, for Memcached CRs. Reads CRs
 * (files, directories or stdin), prints the manifests they become, ready for `kubectl apply -f -`;
 * other objects in the input are passed through unchanged. When any CR fails, nothing is printed
 * on stdout: a partial stream piped into kubectl would half-apply.
 * This module must not load @kubernetes/client-node (the command has to start fast).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { Memcached } from '../api/memcached.ts'
import { loadChart, DEFAULT_CHART_DIR, parseYamlValue } from '../render/chart.ts'
import { DeadlineExceeded, withDeadline } from '../render/deadline.ts'
import { renderInstance, templateRunning } from '../render/engine.ts'
import { readPlatformOverlays } from './overlays-file.ts'
import { renderedProblems } from './check-objects.ts'
import { RenderError } from '../render/errors.ts'
import { offlineSecrets } from '../render/secrets.ts'
import { toJsonList, toYamlStream } from '../render/manifest.ts'
import { isPlainMap, parseSet, parseSetJson, parseSetValue, type Values } from '../render/values.ts'
import { parseDocuments, readInputs, unreadable } from './inputs.ts'
import { parseDuration, UsageError, type CliIO } from './io.ts'
import { kindScopes } from './kind-scopes.ts'

export { readInputs }

export interface RenderOptions extends OverrideOptions {
  filename: string[]
  /** `-R`: directories given with -f are read with their subdirectories. */
  recursive?: boolean
  chart?: string
  output: string
  namespace?: string
  /** `--show-only TEMPLATE` (repeatable): only the objects of these templates (`templates/deployment.ejs`). */
  showOnly?: string[]
  /** `--output-dir DIR`: each CR's objects written under DIR/NAMESPACE/NAME/, one file per template, instead of stdout. */
  outputDir?: string
  /** `--timeout`: how long templates may run (a Go duration; default 10s). */
  timeout?: string
  /** `kubernetes` (default) or `openshift`: the chart's values for that platform (platforms/<name>.yaml), as the operator finds it by discovery. */
  platform?: string
  /** `--overlays FILE`: the platform's overlays, as `run --overlays` applies them. */
  overlays?: string
  /** `--show-overlays`: which overlay changed which fields of which object, on stderr. */
  showOverlays?: boolean
}

/** The platforms `--platform` accepts: what the operator's discovery can find (controller/platform.ts). */
export const PLATFORMS = ['kubernetes', 'openshift'] as const

/** How long templates may run (`--timeout`) before render gives up on them: a template that loops forever must not hang it. */
export const TEMPLATE_DEADLINE = '10s'
/** What each further CR adds to the deadline: a fleet renders at about 1 ms a CR. */
const PER_CR_MS = 20

/** What a command reads overrides from: `--values`, `--set-json`, `--set`, `--set-string`, `--set-file`. */
export interface OverrideOptions {
  values: string[]
  set: string[]
  setString: string[]
  setJson?: string[]
  setFile?: string[]
}

/** `key=rest` of a `--set-json`/`--set-file` argument. */
function keyAnd(flag: string, arg: string): [string, string] {
  const eq = arg.indexOf('=')
  if (eq <= 0) throw new RenderError('input', [`${flag} ${JSON.stringify(arg)}: expected key=${flag === '--set-file' ? 'path' : 'json'}`])
  return [arg.slice(0, eq), arg.slice(eq + 1)]
}

/**
 * The overrides, lowest precedence first, in Helm's order (pkg/cli/values/options.go
 * MergeValues): `--values` files, `--set-json`, `--set`, `--set-string`, `--set-file`.
 */
export function readOverrides(opts: OverrideOptions, io: CliIO): Values[] {
  const overrides: Values[] = []
  for (const f of opts.values) {
    let text: string
    try {
      text = readFileSync(resolve(io.cwd, f), 'utf8')
    } catch (err) {
      throw unreadable(f, err)
    }
    const value: unknown = parseYamlValue(text, f) ?? {}
    if (!isPlainMap(value)) throw new RenderError('input', [`${f}: a values file must be a map`])
    if (value.apiVersion !== undefined && value.kind !== undefined) throw new RenderError('input', [`${f}: a values file is a map of values, and this is a Kubernetes object (${JSON.stringify(value.kind)}): give it with -f`])
    overrides.push(value)
  }
  for (const s of opts.setJson ?? []) overrides.push(parseSetJson(s))
  for (const s of opts.set) overrides.push(parseSet(s))
  for (const s of opts.setString) overrides.push(parseSet(s, true))
  for (const s of opts.setFile ?? []) {
    const [key, path] = keyAnd('--set-file', s)
    let text: string
    try {
      text = readFileSync(resolve(io.cwd, path), 'utf8')
    } catch (err) {
      throw unreadable(path, err)
    }
    overrides.push(parseSetValue(key, text, '--set-file'))
  }
  return overrides
}

/** A DNS-1123 label: what a namespace name must be (apimachinery ValidateNamespaceName). */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/

/** The namespace a CR renders into: its own, else `-n`, else `default`; a conflict is an error like kubectl's. */
export function namespaceOf(cr: Memcached, flag: string | undefined): string {
  const own = cr.metadata.namespace
  if (own && flag && own !== flag) {
    throw new RenderError('input', [`Memcached ${own}/${cr.metadata.name}: the namespace from the provided object "${own}" does not match the namespace "${flag}"`])
  }
  return own ?? flag ?? 'default'
}

/** `Kind.group/namespace/name`: an object's identity, as kustomize and the API server key objects. */
function identity(o: Record<string, unknown>): string {
  const apiVersion = String(o.apiVersion)
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''
  const meta = o.metadata as { name?: unknown; namespace?: unknown }
  return `${String(o.kind)}${group ? `.${group}` : ''} ${meta.namespace ? `${String(meta.namespace)}/` : ''}${String(meta.name)}`
}

/** Runs `render`; returns the exit code. */
export async function runRender(opts: RenderOptions, io: CliIO): Promise<number> {
  if (opts.output !== 'yaml' && opts.output !== 'json') throw new UsageError(`--output must be yaml or json, not ${JSON.stringify(opts.output)}`)
  const platform = opts.platform ?? 'kubernetes'
  if (!(PLATFORMS as readonly string[]).includes(platform)) throw new UsageError(`--platform must be ${PLATFORMS.join(' or ')}, not ${JSON.stringify(opts.platform)}`)
  if (opts.namespace !== undefined && !NAMESPACE.test(opts.namespace)) throw new UsageError(`--namespace ${JSON.stringify(opts.namespace)}: a namespace must be a lowercase RFC 1123 label (a-z, 0-9 and -, at most 63 characters)`)
  const deadlineMs = parseDuration(opts.timeout ?? TEMPLATE_DEADLINE)
  const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
  // What lint and the operator (at start, through discovery) refuse: a cluster-scoped kind would
  // get the CR's namespace stamped on it here, and be created cluster-wide by kubectl apply.
  const scoped = kindScopes(chart.kinds).problems
  if (scoped.length > 0) throw new RenderError('input', scoped.map((p) => `chart ${chart.dir}: ${p}`))
  const overrides = readOverrides(opts, io)
  const platformOverlays = readPlatformOverlays(opts.overlays, io.cwd)
  const shownOverlays: string[] = []
  const documents = (await readInputs(opts.filename, io, opts.recursive)).flatMap((input) => parseDocuments(input.text, input.source))
  if (documents.length === 0) throw new RenderError('input', [`no Memcached resource in the input (${opts.filename.map((f) => (f === '-' ? '<stdin>' : f)).join(', ')})`])
  const items: { source: string; object: unknown; template?: string; cr?: string }[] = []
  const problems: string[] = []
  const secrets = new Set<string>()
  const crs = new Map<string, string>()
  const render = () => {
    for (const doc of documents) {
      if ('other' in doc) {
        items.push({ source: doc.source, object: doc.other })
        continue
      }
      const cr = doc.memcached
      const who = `${doc.source}: Memcached ${cr.metadata.namespace ?? opts.namespace ?? 'default'}/${cr.metadata.name}`
      try {
        const namespace = namespaceOf(cr, opts.namespace)
        const key = `${namespace}/${cr.metadata.name}`
        // kustomize refuses two resources with one id: both would render the same objects.
        const first = crs.get(key)
        if (first !== undefined) {
          problems.push(`${who}: given twice (first in ${first})`)
          continue
        }
        crs.set(key, doc.source)
        const result = renderInstance(chart, { name: cr.metadata.name, namespace, spec: cr.spec ?? {}, overrides, secrets: offlineSecrets, platform, platformOverlays, labels: cr.metadata.labels ?? {} })
        for (const c of result.overlays) shownOverlays.push(`render: Memcached ${key}: ${c.overlay}: ${c.object}: ${c.paths.join(', ')}\n`)
        result.objects.forEach((object, i) => items.push({ source: `${chart.name}/${result.sources[i]}`, object, template: result.sources[i], cr: key }))
        problems.push(...renderedProblems(result.objects, result.sources).map((p) => `${who}: ${p}`))
        for (const s of result.secrets) secrets.add(s)
      } catch (err) {
        if (!(err instanceof RenderError)) throw err
        problems.push(...err.problems.map((p) => (p.startsWith('Memcached ') ? `${doc.source}: ${p}` : `${who}: ${p}`)))
      }
    }
  }
  try {
    withDeadline(deadlineMs + PER_CR_MS * (documents.length - 1), render)
  } catch (err) {
    if (!(err instanceof DeadlineExceeded)) throw err
    throw new RenderError('template', [`${chart.name}/${templateRunning() ?? 'templates'}: ${err.message}`])
  }
  // The same object twice (a CR's render and an object passed through, or two CRs' names that
  // meet): kubectl would apply the second over the first.
  const seen = new Map<string, string>()
  for (const { source, object } of items) {
    const id = identity(object as Record<string, unknown>)
    const first = seen.get(id)
    if (first !== undefined) problems.push(`${id}: in the output twice (${first} and ${source})`)
    else seen.set(id, source)
  }
  if (problems.length > 0) throw new RenderError('values', problems)
  const shown = showOnly(opts.showOnly ?? [], chart, items)
  if (opts.outputDir !== undefined) writeOutputDir(resolve(io.cwd, opts.outputDir), opts.outputDir, shown, io)
  else io.stdout(opts.output === 'json' ? toJsonList(shown.map((i) => i.object)) : toYamlStream(shown))
  if (opts.showOverlays) io.stderr(shownOverlays.length > 0 ? shownOverlays.join('') : 'render: no overlay changed anything\n')
  // Without a cluster there is no Secret to digest: say so once, on stderr (stdout stays a manifest stream).
  if (secrets.size > 0) io.stderr(`render: checksums of Secret(s) ${[...secrets].sort().join(', ')} not computed offline (no cluster); pods' checksum annotations are placeholders\n`)
  return 0
}

/**
 * `--show-only`: the objects of the templates named (as `templates/x.ejs`, with or without the
 * chart's name before it), like `helm template --show-only`; a name the chart has no template of,
 * or templates that rendered nothing, are errors, as in Helm.
 */
function showOnly<T extends { template?: string }>(names: string[], chart: { name: string; templates: readonly { file: string }[] }, items: T[]): T[] {
  if (names.length === 0) return items
  const files = new Set(chart.templates.map((t) => t.file))
  const wanted = new Set<string>()
  for (const name of names) {
    const file = name.startsWith(`${chart.name}/`) ? name.slice(chart.name.length + 1) : name
    if (!files.has(file)) throw new RenderError('input', [`--show-only ${name}: the chart has no such template (its templates: ${[...files].sort().join(', ')})`])
    wanted.add(file)
  }
  const shown = items.filter((i) => i.template !== undefined && wanted.has(i.template))
  if (shown.length === 0) throw new RenderError('input', [`--show-only: ${[...wanted].join(', ')} rendered no object for these CRs`])
  return shown
}

/**
 * `--output-dir`: one file per CR and template, `DIR/NAMESPACE/NAME/templates/x.yaml` (Helm's
 * `--output-dir` writes `DIR/CHART/templates/x.yaml` for its one release), and the objects passed
 * through in `DIR/passthrough.yaml`; each file written is said on stdout, as Helm does.
 */
function writeOutputDir(dir: string, shown: string, items: { source: string; object: unknown; template?: string; cr?: string }[], io: CliIO): void {
  const files = new Map<string, { source: string; object: unknown }[]>()
  for (const item of items) {
    const path = item.template !== undefined && item.cr !== undefined ? join(item.cr, item.template.replace(/\.ejs$/, '.yaml')) : 'passthrough.yaml'
    files.set(path, [...(files.get(path) ?? []), item])
  }
  for (const [path, objects] of files) {
    const target = join(dir, path)
    try {
      mkdirSync(dirname(target), { recursive: true })
      writeFileSync(target, toYamlStream(objects))
    } catch (err) {
      throw new RenderError('input', [`--output-dir ${shown}: cannot write ${path}: ${(err as Error).message}`])
    }
    io.stdout(`wrote ${join(shown, path)}\n`)
  }
}
