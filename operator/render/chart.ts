/**
 * A chart: Chart.yaml, values.yaml, values.schema.json, kinds.yaml (the kinds it may render),
 * platforms/*.yaml and templates/*.ejs (files whose name starts with `_` are partials). A chart is
 * data with an identity: it loads from a map of its files (read from a directory, or from a
 * ChartRevision object, api/chart-revision.ts), and the sha256 of that map is its digest. Loading
 * compiles every template once; a chart loaded from a directory is cached by directory, so
 * rendering many CRs compiles nothing again.
 */
import ejs from 'ejs'
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import YAML from 'yaml'
import { firstLine, lineAt, ModuleUnavailable, RenderError, yamlData, yamlProblems } from './errors.ts'
import { KINDS_FILE, parseKinds, type ChartKind } from './kinds.ts'
import { lazyRequire as require } from './lazy-require.ts'
import { yamlScalar } from './scalar.ts'
import { compileValuesSchema, type SchemaNode, type ValuesValidator } from './schema.ts'
import { compileTrace } from './trace.ts'
import { cloneData, isPlainMap, type Values } from './values.ts'

/** The chart shipped with the operator. */
export const DEFAULT_CHART_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'charts', 'memcached')

/** Names every template sees as local variables (helpers are added by the engine). */
export const TEMPLATE_LOCALS = ['values', 'release', 'chart', 'ctx', 'h', 'toYaml', 'include', 'required', 'quote', 'fullname', 'labels', 'selectorLabels', 'sha256', 'secretChecksum', 'fail', 'invalid', 'compareQuantity'] as const

/** A compiled template: `file` is relative to the chart directory, e.g. `templates/deployment.ejs`. */
export interface Template {
  file: string
  /** The template's text, to place a problem of its output on one of its own lines. */
  source?: string
  render(locals: Record<string, unknown>): string
  /** The template line that computed output line `n` of a render with `locals` (render/trace.ts); undefined for the template's own text. */
  traceLine?(locals: Record<string, unknown>, n: number): number | undefined
}

/** A chart's files by path relative to the chart's directory (`templates/deployment.ejs`), as text. */
export type ChartFiles = ReadonlyMap<string, string>

/** A loaded chart. */
export interface Chart {
  /** Where it was loaded from: its directory, or `ChartRevision <name>`. */
  dir: string
  /** The files it was loaded from. */
  files: ChartFiles
  /** sha256 (hex) of {@link files}: what a chart revision is named by ({@link chartDigest}). */
  digest: string
  name: string
  version: string
  appVersion: string
  description: string
  /** values.yaml, parsed (null-prototype maps). */
  defaults: Values
  /**
   * platforms/<name>.yaml: values over the defaults on one platform (`openshift`), below the
   * spec; their nulls are kept, so that they can remove a default (see docs/chart-authoring.md).
   */
  platforms: Readonly<Record<string, Values>>
  /** values.schema.json as written. */
  schema: SchemaNode
  validate: ValuesValidator
  /** kinds.yaml: the kinds the chart may render, in the order declared. */
  kinds: readonly ChartKind[]
  /** Templates that produce manifests, sorted by file name. */
  templates: Template[]
  /** Partials by name (`_helpers.ejs` → `helpers`). */
  partials: Map<string, Template>
}

const cache = new Map<string, Chart>()

/** Loads (or returns the cached) chart in `dir`; `reload` forces a fresh read, e.g. after a file changed. */
export function loadChart(dir: string = DEFAULT_CHART_DIR, reload = false): Chart {
  const key = resolve(dir)
  const cached = cache.get(key)
  if (cached && !reload) return cached
  const chart = readChart(key)
  cache.set(key, chart)
  return chart
}

/** Drops the cached chart of `dir`, so that the next {@link loadChart} reads it again. */
export function forgetChart(dir: string): void {
  cache.delete(resolve(dir))
}

function readText(dir: string, file: string): string {
  try {
    return readFileSync(join(dir, file), 'utf8')
  } catch (err) {
    throw new RenderError('input', [`chart ${dir}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`])
  }
}

/** The files every chart has. */
const REQUIRED_FILES = ['Chart.yaml', 'values.yaml', 'values.schema.json', KINDS_FILE] as const

/**
 * The files of the chart in `dir` (what {@link chartFromFiles} loads): the required ones (one
 * missing is an error naming it), templates/*.ejs and platforms/*.yaml. Nothing else of the
 * directory (README, ci/, tests) is part of the chart's identity.
 */
export function readChartFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>()
  for (const f of REQUIRED_FILES) files.set(f, readText(dir, f))
  let templates: string[]
  try {
    templates = readdirSync(join(dir, 'templates')).filter((f) => f.endsWith('.ejs')).sort()
  } catch {
    throw new RenderError('input', [`chart ${dir}: no templates/ directory`])
  }
  for (const f of templates) files.set(`templates/${f}`, readText(dir, join('templates', f)))
  for (const f of platformFiles(dir)) files.set(`${PLATFORMS_DIR}/${f}`, readText(dir, join(PLATFORMS_DIR, f)))
  return files
}

/**
 * The digest of a chart: sha256 over its files in path order, each as its path, a NUL, its
 * length and a NUL, then its text — so that no two different maps hash alike.
 */
export function chartDigest(files: ChartFiles): string {
  const hash = createHash('sha256')
  for (const path of [...files.keys()].sort()) {
    const text = files.get(path)!
    hash.update(`${path}\0${Buffer.byteLength(text)}\0`)
    hash.update(text)
  }
  return hash.digest('hex')
}

/** One YAML 1.1 document as data (duplicate keys refused, aliases bounded); every error is placed in `source`. */
export function parseYamlValue(text: string, source: string): unknown {
  const doc = YAML.parseDocument(text, { version: '1.1', uniqueKeys: true })
  if (doc.errors.length > 0) throw new RenderError('input', yamlProblems(source, doc.errors))
  return yamlData(doc, source, text)
}

/** The text of `file` of a chart being loaded from `files` (`source` names the chart in errors). */
function fileText(files: ChartFiles, source: string, file: string): string {
  const text = files.get(file)
  if (text === undefined) throw new RenderError('input', [`chart ${source}: cannot read ${file}: ENOENT`])
  return text
}

function parseYamlFile(files: ChartFiles, source: string, file: string): unknown {
  return parseYamlValue(fileText(files, source, file), join(source, file))
}

/**
 * Every file loading the chart in `dir` reads (what readChart below reads: keep them in step), and
 * templates/ itself, whose listing it reads.
 */
export function chartFiles(dir: string): string[] {
  let templates: string[] = []
  try {
    templates = readdirSync(join(dir, 'templates')).sort().map((f) => join(dir, 'templates', f))
  } catch {
    // No templates/ directory: loading the chart reports it.
  }
  return [join(dir, 'Chart.yaml'), join(dir, 'values.yaml'), join(dir, 'values.schema.json'), join(dir, KINDS_FILE), join(dir, 'templates'), ...templates, ...platformFiles(dir).map((f) => join(dir, PLATFORMS_DIR, f))]
}

const PLATFORMS_DIR = 'platforms'

/** The chart's platform files (`openshift.yaml`), sorted; none without a platforms/ directory. */
function platformFiles(dir: string): string[] {
  try {
    return readdirSync(join(dir, PLATFORMS_DIR)).filter((f) => f.endsWith('.yaml')).sort()
  } catch {
    return []
  }
}

/** platforms/*.yaml, each a map of values (nulls kept: a platform may remove a default). */
function readPlatforms(files: ChartFiles, dir: string): Record<string, Values> {
  const out: Record<string, Values> = Object.create(null)
  for (const file of [...files.keys()].filter((f) => f.startsWith(`${PLATFORMS_DIR}/`) && f.endsWith('.yaml')).sort()) {
    const values = parseYamlFile(files, dir, file) ?? {}
    if (!isPlainMap(values)) throw new RenderError('input', [`${join(dir, file)}: must be a map`])
    out[file.slice(PLATFORMS_DIR.length + 1, -'.yaml'.length)] = cloneData(values) as Values
  }
  return out
}

function readChart(dir: string): Chart {
  return chartFromFiles(readChartFiles(dir), dir)
}

/**
 * Loads a chart from its files (see {@link readChartFiles}); `dir` names it in errors and in
 * {@link Chart.dir}. Every template is compiled, every problem of them reported at once.
 */
export function chartFromFiles(files: ChartFiles, dir: string): Chart {
  const meta = parseYamlFile(files, dir, 'Chart.yaml')
  if (!isPlainMap(meta) || typeof meta.name !== 'string' || typeof meta.version !== 'string') {
    throw new RenderError('input', [`${join(dir, 'Chart.yaml')}: name and version are required`])
  }
  const defaults = parseYamlFile(files, dir, 'values.yaml') ?? {}
  if (!isPlainMap(defaults)) throw new RenderError('input', [`${join(dir, 'values.yaml')}: must be a map`])
  let schema: SchemaNode
  try {
    schema = JSON.parse(fileText(files, dir, 'values.schema.json')) as SchemaNode
  } catch (err) {
    if (err instanceof RenderError) throw err
    throw new RenderError('input', [`${join(dir, 'values.schema.json')}: ${(err as Error).message}`])
  }
  let validate: ValuesValidator
  try {
    validate = compileValuesSchema(schema)
  } catch (err) {
    if (err instanceof ModuleUnavailable) throw err
    throw new RenderError('input', [`${join(dir, 'values.schema.json')}: invalid schema: ${(err as Error).message}`])
  }
  const kinds = parseKinds(parseYamlFile(files, dir, KINDS_FILE), join(dir, KINDS_FILE))
  const templateFiles = [...files.keys()].filter((f) => /^templates\/[^/]+\.ejs$/.test(f)).sort()
  if (templateFiles.length === 0 && ![...files.keys()].some((f) => f.startsWith('templates/'))) throw new RenderError('input', [`chart ${dir}: no templates/ directory`])
  const templates: Template[] = []
  const partials = new Map<string, Template>()
  const problems: string[] = []
  for (const file of templateFiles) {
    const f = file.slice('templates/'.length)
    try {
      const t = compileTemplate(file, files.get(file)!)
      if (f.startsWith('_')) partials.set(f.slice(1, -'.ejs'.length), t)
      else templates.push(t)
    } catch (err) {
      problems.push((err as Error).message)
    }
  }
  if (problems.length > 0) throw new RenderError('template', problems)
  return {
    dir,
    files,
    digest: chartDigest(files),
    name: meta.name,
    version: meta.version,
    appVersion: String(meta.appVersion ?? meta.version),
    description: String(meta.description ?? ''),
    defaults: cloneData(defaults, true) as Values,
    platforms: readPlatforms(files, dir),
    schema,
    validate,
    kinds,
    templates,
    partials,
  }
}

/**
 * Compiles one EJS template: strict mode (no `with`), every `<%= %>` through {@link yamlScalar}.
 * `<%-` (raw output) is refused: raw text enters only through helpers that return `Raw`.
 */
export function compileTemplate(file: string, source: string): Template {
  const raw = /<%(?!%)-/.exec(source)
  if (raw) {
    throw new Error(`${file}:${lineAt(source, raw.index)}: raw output "<%-" is not allowed; write "<%= %>" (values become YAML-safe scalars) or a helper such as toYaml()`)
  }
  const options = {
    strict: true,
    _with: false,
    localsName: 'locals',
    destructuredLocals: [...TEMPLATE_LOCALS],
    escape: yamlScalar,
    filename: file,
    compileDebug: true,
    client: false,
  }
  let fn: (locals: Record<string, unknown>) => string
  try {
    fn = ejs.compile(source, options as ejs.Options) as unknown as (locals: Record<string, unknown>) => string
  } catch (err) {
    const message = firstLine((err as Error).message)
    const line = /Could not find matching close tag/.test(message) ? unclosedTagLine(source) : syntaxErrorLine(source, options)
    throw new Error(`${file}:${line ?? '?'}: ${message.replace(` in ${file} while compiling ejs`, '')}${line !== undefined ? `\n${codeFrame(source, line)}` : ''}`)
  }
  let trace: ReturnType<typeof compileTrace> | null = null
  return {
    file,
    source,
    traceLine(locals, n) {
      trace ??= compileTrace(source, options) ?? undefined
      return trace?.(locals, n)
    },
    render(locals) {
      try {
        return fn(locals)
      } catch (err) {
        if (err instanceof RenderError) throw err
        throw new RenderError('template', [templateErrorMessage(file, err)])
      }
    },
  }
}

/** The line of the first `<%` that no `%>` closes (`<%%` and `%%>` are literal text). */
function unclosedTagLine(source: string): number | undefined {
  let open: number | undefined
  for (const m of source.matchAll(/<%%|%%>|<%|%>/g)) {
    if (m[0] === '<%') open ??= m.index
    else if (m[0] === '%>') open = undefined
  }
  return open === undefined ? undefined : lineAt(source, open)
}

/** The lines around `line` of a template, marked as EJS marks a runtime error's (`>> 4| …`). */
function codeFrame(source: string, line: number): string {
  const lines = source.split('\n')
  const from = Math.max(1, line - 2)
  const to = Math.min(lines.length, line + 2)
  const out: string[] = []
  for (let n = from; n <= to; n++) out.push(`      ${n === line ? '>>' : '  '} ${n}| ${lines[n - 1]}`)
  return out.join('\n')
}

/** EJS reports a syntax error without a line: compile its generated source to find one. */
function syntaxErrorLine(source: string, options: object): number | undefined {
  try {
    const template = new (ejs as unknown as { Template: new (s: string, o: object) => { generateSource(): void; source: string } }).Template(source, options)
    template.generateSource()
    const generated = template.source
    try {
      new (require('node:vm') as typeof import('node:vm')).Script(`(function(){${generated}\n})`, { filename: 'ejs-generated' })
    } catch (err) {
      const genLine = Number(/ejs-generated:(\d+)/.exec((err as Error).stack ?? '')?.[1])
      if (!genLine) return undefined
      const before = generated.split('\n').slice(0, genLine).join('\n')
      const marks = [...before.matchAll(/__line = (\d+)/g)]
      const last = marks.at(-1)
      // EJS starts at line 1 without a marker.
      return last ? Number(last[1]) : 1
    }
  } catch {
    // No line to add: the caller reports the file alone.
  }
  return undefined
}

/** `templates/x.ejs:12: message` from an error EJS rethrew with its own context block. */
function templateErrorMessage(file: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  const m = /^.*?:(\d+)\n([\s\S]*?)\n\n([\s\S]*)$/.exec(message)
  if (!m) return `${file}: ${message}`
  const context = (m[2] ?? '').split('\n').filter((l) => l.trim() !== '').map((l) => `      ${l}`).join('\n')
  return `${file}:${m[1]}: ${m[3]}\n${context}`
}
