/**
 * The render engine: one Memcached instance (name, namespace, spec) through a chart into the
 * objects it should have. Pure: no cluster, no I/O beyond the cached chart.
 */
import { chartValuesOf } from './spec-fields.ts'
import type { Chart, Template } from './chart.ts'
import { RenderError } from './errors.ts'
import { guardObjects } from './guard.ts'
import { parseManifests, sortObjects, stamp, yamlText, type RenderedObject } from './manifest.ts'
import { dnsLabel, labelValue, sha256 } from './names.ts'
import { Raw, quoteString, yamlScalar } from './scalar.ts'
import { checkSecretName, OFFLINE_CHECKSUM, offlineSecrets, SecretKeysMissing, SecretsNotFound, type SecretSource } from './secrets.ts'
import { cloneData, isPlainMap, mergeAll, withReplacements, type Values } from './values.ts'
import { compareQuantities, quantityOf, QuantityError } from '../kube/quantity.ts'
import { applyOverlays, parseOverlays, platformOverlaysFor, type Overlay, type OverlayChange, type PlatformOverlay } from './overlays.ts'

/** What is rendered: the instance's identity, its spec, and optional overrides (values files, --set). */
export interface RenderInput {
  name: string
  namespace: string
  spec: unknown
  /** Overrides applied over the spec, lowest precedence first (`--values` files, then `--set`). */
  overrides?: Values[]
  /** Where `secretChecksum()` reads Secrets of the namespace; without one, every checksum is {@link OFFLINE_CHECKSUM}. */
  secrets?: SecretSource
  /** The platform (`openshift`): the chart's platforms/<name>.yaml goes over its defaults, below the spec. */
  platform?: string
  /** The platform's overlays (`run --overlays`), applied before the spec's own `overlays`. */
  platformOverlays?: readonly PlatformOverlay[]
  /** The Memcached's labels, which the platform's overlays select by. */
  labels?: Readonly<Record<string, string>>
}

/** The objects an instance should have, in apply order, with the template each came from. */
export interface RenderResult {
  objects: RenderedObject[]
  /** `sources[i]` is the chart-relative template file of `objects[i]`. */
  sources: string[]
  values: Values
  /** The Secrets the templates asked `secretChecksum()` for, as `namespace/name`, sorted. */
  secrets: string[]
  /** What each overlay changed, in the order applied. */
  overlays: OverlayChange[]
}

/** The Secrets one render referred to, and those its source did not have (`namespace/name`). */
interface SecretUse {
  source: SecretSource
  referenced: Set<string>
  missing: Set<string>
  /** Keys that Secrets found lack, one problem each. */
  missingKeys: string[]
}

/** Label values that identify the instance's objects; the operator selects its objects by them. */
export function selectorLabelsFor(chart: Pick<Chart, 'name'>, instance: string): Record<string, string> {
  return { 'app.kubernetes.io/name': chart.name, 'app.kubernetes.io/instance': labelValue(instance) }
}

/** The six standard labels every rendered object carries. */
export function standardLabels(chart: Pick<Chart, 'name' | 'appVersion'>, instance: string): Record<string, string> {
  return {
    ...selectorLabelsFor(chart, instance),
    'app.kubernetes.io/version': labelValue(chart.appVersion),
    'app.kubernetes.io/component': 'cache',
    'app.kubernetes.io/part-of': chart.name,
    'app.kubernetes.io/managed-by': 'memcached-operator',
  }
}

/** Merges chart defaults, the spec and the overrides, and validates the result (every problem, by path). */
export function resolveValues(chart: Chart, input: RenderInput): Values {
  const given = input.spec ?? {}
  if (!isPlainMap(given)) throw new RenderError('values', [`spec: must be a map${Array.isArray(given) ? ', not a list' : ''}`])
  // The operator's own fields of the spec (a revision pin…) are not the chart's values.
  const spec = chartValuesOf(given)
  const platform = input.platform !== undefined && Object.hasOwn(chart.platforms, input.platform) ? chart.platforms[input.platform]! : undefined
  // What a `--set-json key=json` replaces is taken out of the layers below it, the chart's excepted.
  const user = withReplacements([cloneData(spec) as Values, ...(input.overrides ?? [])])
  const values = mergeAll([chart.defaults, ...(platform ? [platform] : []), ...user])
  // The schema's rules judge what the CR and overrides say, without the chart's defaults, as the
  // API server judges a CR's spec (a null there is an unset field, as the server drops it).
  const problems = chart.validate(values, mergeAll(user))
  if (problems.length > 0) throw new RenderError('values', problems.map((p) => blameDefaults(p, chart.defaults, platform && { file: `platforms/${input.platform}.yaml`, values: platform }, [spec, ...(input.overrides ?? [])])))
  return values
}

/**
 * A problem of a value that neither the spec nor an override sets is the chart's own default's:
 * said so, with `values.yaml` (or the platform's file, when that sets it) as its place, rather
 * than blamed on the CR.
 */
function blameDefaults(problem: string, defaults: Values, platform: { file: string; values: Values } | undefined, given: unknown[]): string {
  const m = /^spec\.([^.[:]+)[^:]*: /.exec(problem)
  if (!m || given.some((g) => isPlainMap(g) && Object.hasOwn(g, m[1]!))) return problem
  if (platform && Object.hasOwn(platform.values, m[1]!)) return `${platform.file}: ${problem.slice('spec.'.length)} (a value of the chart on this platform: neither the spec nor an override sets ${m[1]})`
  if (!Object.hasOwn(defaults, m[1]!)) return problem
  return `values.yaml: ${problem.slice('spec.'.length)} (a default of the chart: neither the spec nor an override sets ${m[1]})`
}

/** The template being run, if any: what a deadline that stopped a render names. */
let running: string | undefined

/** The chart file of the template running now (read after a deadline stopped it). */
export function templateRunning(): string | undefined {
  return running
}

/** Renders an instance; throws {@link RenderError} listing every problem found. */
export function renderInstance(chart: Chart, input: RenderInput): RenderResult {
  let overlays: Overlay[] = []
  try {
    overlays = [...platformOverlaysFor(input.platformOverlays ?? [], input.labels ?? {}), ...parseOverlays(isPlainMap(input.spec) ? input.spec.overlays : undefined, 'spec.overlays')]
  } catch (err) {
    // Every problem of the spec at once: the overlays' and the values'.
    if (!(err instanceof RenderError)) throw err
    let more: string[] = []
    try {
      resolveValues(chart, input)
    } catch (e) {
      if (!(e instanceof RenderError)) throw e
      more = e.problems
    }
    throw new RenderError('values', [...more, ...err.problems])
  }
  const values = resolveValues(chart, input)
  const labels = standardLabels(chart, input.name)
  const secrets: SecretUse = { source: input.secrets ?? offlineSecrets, referenced: new Set(), missing: new Set(), missingKeys: [] }
  const locals = templateLocals(chart, input, values, labels, secrets)
  const items: { source: string; object: RenderedObject }[] = []
  const problems: string[] = []
  let kind: RenderError['kind'] = 'template'
  const renderedFor = { name: input.name, namespace: input.namespace }
  for (const t of chart.templates) {
    running = t.file
    try {
      for (const object of parseManifests(t.file, t.render(locals), renderedFor)) items.push({ source: t.file, object: stamp(object, input.namespace, labels) })
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      kind = err.kind
      problems.push(...err.problems.map((p) => onTemplateLine(p, t, locals)))
    } finally {
      running = undefined
    }
  }
  if (problems.length > 0) throw new RenderError(kind, problems)
  if (secrets.missing.size > 0) throw new SecretsNotFound([...secrets.missing].sort())
  if (secrets.missingKeys.length > 0) throw new SecretKeysMissing(secrets.missingKeys)
  const patched = items.map((i) => i.object)
  const changes = applyOverlays(patched, overlays, input.namespace, chart.kinds)
  for (const [i, o] of patched.entries()) items[i]!.object = o
  const refused = guardObjects(items.map((i) => i.object), input.namespace, chart.kinds, items.map((i) => i.source))
  if (refused.length > 0) throw new RenderError('guard', refused)
  const order = new Map(items.map((item) => [item.object, item.source]))
  const objects = sortObjects(items.map((i) => i.object))
  return { objects, sources: objects.map((o) => order.get(o) ?? ''), values, secrets: [...secrets.referenced].sort(), overlays: changes }
}

/**
 * A problem placed on a line of a template's output (`file: output line 7: "text": why`) placed on
 * the template's own line, `file:12: why (output line 7: "text")`: the line of the `<%= %>` that
 * computed it (render/trace.ts, which renders the template once more), else the one line whose
 * text it is as written.
 */
function onTemplateLine(problem: string, t: Template, locals: Record<string, unknown>): string {
  const m = /^([^:]+): output line (\d+): ("(?:[^"\\]|\\.)*"): ([\s\S]*)$/.exec(problem)
  if (!m || t.source === undefined || m[1] !== t.file) return problem
  const at = (line: number) => `${t.file}:${line}: ${m[4]} (output line ${m[2]}: ${m[3]})`
  const computed = t.traceLine?.(locals, Number(m[2]))
  if (computed !== undefined) return at(computed)
  const text = JSON.parse(m[3]!) as string
  if (text === '') return problem
  const lines = t.source.split('\n').flatMap((l, i) => (l.trim() === text ? [i + 1] : []))
  return lines.length === 1 ? at(lines[0]!) : problem
}

/** The variables and helpers a template sees. */
function templateLocals(chart: Chart, input: RenderInput, values: Values, labels: Record<string, string>, secrets: SecretUse): Record<string, unknown> {
  const selector = selectorLabelsFor(chart, input.name)
  const locals: Record<string, unknown> = {}
  const helpers = {
    /** YAML block text of a value, every line indented by `indent` spaces (after a newline); scalars and empty collections stay inline. */
    toYaml(value: unknown, indent = 0): Raw {
      if (value === null || typeof value !== 'object' || Object.keys(value).length === 0) return new Raw(yamlScalar(value))
      const pad = ' '.repeat(indent)
      const text = yamlText(value).trimEnd()
      return new Raw(`\n${text.split('\n').map((l) => pad + l).join('\n')}`)
    },
    /** Renders a partial (`templates/_name.ejs`), which sees the same locals plus `ctx`; optionally indented. */
    include(name: string, ctx: Record<string, unknown> = {}, indent = 0): Raw {
      const partial: Template | undefined = chart.partials.get(name)
      if (!partial) throw new Error(`include: no partial "${name}" (expected templates/_${name}.ejs)`)
      const text = partial.render({ ...locals, ctx }).replace(/\n+$/, '')
      return new Raw(indent > 0 ? text.split('\n').map((l) => (l === '' ? l : ' '.repeat(indent) + l)).join('\n') : text)
    },
    /** The value, or a template error with `message` when it is undefined, null or empty. */
    required<T>(value: T, message: string): T {
      if (value === undefined || value === null || value === '') throw new Error(message)
      return value
    },
    /** The value, or `fallback` when it is undefined, null or empty ('' only; unlike Helm, false and 0 are values). */
    default<T, F>(value: T, fallback: F): T | F {
      return value === undefined || value === null || value === '' ? fallback : value
    },
    /** A double-quoted string of any value (numbers and booleans become strings). */
    quote(value: unknown): Raw {
      return new Raw(quoteString(typeof value === 'string' ? value : JSON.stringify(value) ?? ''))
    },
    /** The instance's object name (a DNS-1035 label, shortened with a hash when needed), with an optional suffix. */
    fullname(suffix?: string): string {
      return dnsLabel(suffix ? `${input.name}-${suffix}` : input.name)
    },
    /** The standard labels (a fresh map). */
    labels(): Record<string, string> {
      return { ...labels }
    },
    /** The labels that select the instance's pods (name and instance only: a selector is immutable). */
    selectorLabels(): Record<string, string> {
      return { ...selector }
    },
    /** Hex SHA-256 of a string, or of the JSON of any other value. */
    sha256(value: unknown): string {
      return sha256(typeof value === 'string' ? value : JSON.stringify(value) ?? '')
    },
    /**
     * Hex SHA-256 of the content of the Secret `name` in the instance's namespace (never the
     * content itself), for a pod-template annotation: a rotation changes it and rolls the pods.
     * A Secret the source does not have fails the render as a whole (after every template ran) —
     * unless `{ optional: true }`: then it is `''` (for a Secret that something the render creates
     * writes, such as cert-manager from a Certificate; its arrival re-renders the CR).
     * `{ keys: { key: why } }` names the keys the pods read: a Secret found without one of them
     * fails the render as a whole too, each missing key a problem with its why (where the source
     * knows key names: the operator's cache does, offline renders do not).
     */
    secretChecksum(name: unknown, options?: { optional?: boolean; keys?: Record<string, string> }): string {
      const key = `${input.namespace}/${checkSecretName(name)}`
      secrets.referenced.add(key)
      const sum = secrets.source.checksum(input.namespace, name as string)
      if (sum !== undefined) {
        const has = secrets.source.keys?.(input.namespace, name as string)
        if (has) {
          for (const [k, why] of Object.entries(options?.keys ?? {})) {
            if (!has.includes(k)) secrets.missingKeys.push(`Secret ${key} has no key ${JSON.stringify(k)}, which ${why}`)
          }
        }
        return sum
      }
      if (options?.optional === true) return ''
      secrets.missing.add(key)
      return OFFLINE_CHECKSUM
    },
    /** Stops rendering with a template error. */
    fail(message: string): never {
      throw new Error(message)
    },
    /**
     * Stops rendering because the values are wrong together (what a schema cannot say), with one
     * problem per argument, each `spec.path: message`: like a schema error, it makes the CR
     * InvalidSpec rather than TemplateError.
     */
    invalid(...problems: string[]): never {
      throw new RenderError('values', problems)
    },
    /**
     * -1, 0 or 1 as Kubernetes quantity `a` is less than, equal to or greater than `b`
     * (`"600Mi"`, `"1Gi"`, `512`), exactly as apimachinery compares them; a template error names a
     * string that is not a quantity.
     */
    compareQuantity(a: string | number, b: string | number): number {
      try {
        return compareQuantities(quantityOf(a), quantityOf(b))
      } catch (err) {
        if (err instanceof QuantityError) throw new Error(`compareQuantity: ${JSON.stringify(err.input)} is not a quantity: ${err.message}`)
        throw err
      }
    },
  }
  Object.assign(locals, helpers, {
    values,
    release: { name: input.name, namespace: input.namespace },
    ctx: {},
    chart: { name: chart.name, version: chart.version, appVersion: chart.appVersion },
    h: helpers,
  })
  return locals
}
