/**
 * `memcached-operator render`: what `helm template` is to a chart, for Memcached CRs. Reads CRs
 * (files or stdin), prints the manifests they become, ready for `kubectl apply -f -`. When any CR
 * fails, nothing is printed on stdout: a partial stream piped into kubectl would half-apply.
 * This module must not load @kubernetes/client-node (the command has to start fast).
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseMemcacheds, type Memcached } from '../api/memcached.ts'
import { loadChart, DEFAULT_CHART_DIR, parseYamlValue } from '../render/chart.ts'
import { renderInstance } from '../render/engine.ts'
import { RenderError } from '../render/errors.ts'
import { offlineSecrets } from '../render/secrets.ts'
import { toJsonList, toYamlStream } from '../render/manifest.ts'
import { isPlainMap, parseSet, type Values } from '../render/values.ts'
import { UsageError, type CliIO } from './io.ts'

export interface RenderOptions {
  filename: string[]
  chart?: string
  values: string[]
  set: string[]
  setString: string[]
  output: string
  namespace?: string
  /** `kubernetes` (default) or `openshift`: the chart's values for that platform (platforms/<name>.yaml), as the operator finds it by discovery. */
  platform?: string
}

/** The platforms `--platform` accepts: what the operator's discovery can find (controller/platform.ts). */
export const PLATFORMS = ['kubernetes', 'openshift'] as const

/** Reads `-f` inputs; `-` is standard input (once). */
export async function readInputs(files: string[], io: CliIO): Promise<{ source: string; text: string }[]> {
  if (files.length === 0) throw new UsageError('no input: give -f FILE (or -f - for standard input)')
  const out: { source: string; text: string }[] = []
  let stdinRead = false
  for (const f of files) {
    if (f === '-') {
      if (stdinRead) throw new UsageError('-f - given more than once')
      stdinRead = true
      out.push({ source: '<stdin>', text: await io.stdin() })
    } else {
      try {
        out.push({ source: f, text: readFileSync(resolve(io.cwd, f), 'utf8') })
      } catch (err) {
        throw new RenderError('input', [`${f}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`])
      }
    }
  }
  return out
}

/** The `--values` files and `--set` pairs as overrides, lowest precedence first. */
export function readOverrides(opts: Pick<RenderOptions, 'values' | 'set' | 'setString'>, io: CliIO): Values[] {
  const overrides: Values[] = []
  for (const f of opts.values) {
    let text: string
    try {
      text = readFileSync(resolve(io.cwd, f), 'utf8')
    } catch (err) {
      throw new RenderError('input', [`${f}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`])
    }
    const value: unknown = parseYamlValue(text, f) ?? {}
    if (!isPlainMap(value)) throw new RenderError('input', [`${f}: a values file must be a map`])
    overrides.push(value)
  }
  for (const s of opts.set) overrides.push(parseSet(s))
  for (const s of opts.setString) overrides.push(parseSet(s, true))
  return overrides
}

/** The namespace a CR renders into: its own, else `-n`, else `default`; a conflict is an error like kubectl's. */
export function namespaceOf(cr: Memcached, flag: string | undefined): string {
  const own = cr.metadata.namespace
  if (own && flag && own !== flag) {
    throw new RenderError('input', [`Memcached ${own}/${cr.metadata.name}: the namespace from the provided object "${own}" does not match the namespace "${flag}"`])
  }
  return own ?? flag ?? 'default'
}

/** Runs `render`; returns the exit code. */
export async function runRender(opts: RenderOptions, io: CliIO): Promise<number> {
  if (opts.output !== 'yaml' && opts.output !== 'json') throw new UsageError(`--output must be yaml or json, not ${JSON.stringify(opts.output)}`)
  const platform = opts.platform ?? 'kubernetes'
  if (!(PLATFORMS as readonly string[]).includes(platform)) throw new UsageError(`--platform must be ${PLATFORMS.join(' or ')}, not ${JSON.stringify(opts.platform)}`)
  const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
  const overrides = readOverrides(opts, io)
  const crs: Memcached[] = []
  for (const input of await readInputs(opts.filename, io)) crs.push(...parseMemcacheds(input.text, input.source))
  if (crs.length === 0) throw new RenderError('input', ['no Memcached resource in the input'])
  const items: { source: string; object: unknown }[] = []
  const problems: string[] = []
  const secrets = new Set<string>()
  for (const cr of crs) {
    try {
      const namespace = namespaceOf(cr, opts.namespace)
      const result = renderInstance(chart, { name: cr.metadata.name, namespace, spec: cr.spec ?? {}, overrides, secrets: offlineSecrets, platform })
      result.objects.forEach((object, i) => items.push({ source: `${chart.name}/${result.sources[i]}`, object }))
      for (const s of result.secrets) secrets.add(s)
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      const who = `Memcached ${cr.metadata.namespace ?? opts.namespace ?? 'default'}/${cr.metadata.name}`
      problems.push(...err.problems.map((p) => `${who}: ${p}`))
    }
  }
  if (problems.length > 0) throw new RenderError('values', problems)
  io.stdout(opts.output === 'json' ? toJsonList(items.map((i) => i.object)) : toYamlStream(items))
  // Without a cluster there is no Secret to digest: say so once, on stderr (stdout stays a manifest stream).
  if (secrets.size > 0) io.stderr(`render: checksums of Secret(s) ${[...secrets].sort().join(', ')} not computed offline (no cluster); pods' checksum annotations are placeholders\n`)
  return 0
}
