/**
 * `npm run test:affected`: the test files a change can affect, run without coverage — the fast loop
 * of docs/contributing.md. A test file is affected when it imports, directly or through other
 * files, a file that changed (the import graph is esbuild's, as test/house.test.ts reads it), or
 * when it reads a changed file of charts/, kustomize/ or docs/ (the table below).
 *
 *   npm run test:affected                 changes in the working tree (staged, unstaged, untracked)
 *   npm run test:affected -- main         and everything changed since `main`
 *   npm run test:affected -- --list main  only print the files
 *
 * `npm test` stays the whole truth: type-check, every file, coverage.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { metafileOf } from './import-graph.ts'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

const texts = new Map<string, string>()
/** Whether a source file's text names `what` (a file it reads at run time rather than imports). */
const names = (what: string) => (file: string): boolean => {
  if (!texts.has(file)) texts.set(file, readFileSync(join(root, file), 'utf8'))
  return (texts.get(file) as string).includes(what)
}

/** Files that code reads rather than imports, and which of the files a test reaches read them. */
const READS: { changed: RegExp; reads: (file: string) => boolean }[] = [
  // The chart: its values, schema, kinds and templates are read by the render engine.
  { changed: /^charts\/memcached\//, reads: (f) => f === 'operator/render/chart.ts' },
  { changed: /^charts\/memcached-operator\//, reads: names('charts/memcached-operator') },
  { changed: /^kustomize\//, reads: names('kustomize/') },
  { changed: /^(docs\/.*\.md|README\.md)$/, reads: (f) => f === 'test/support/docs.ts' },
]

function git(args: string[]): string[] {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.trim()}`)
  return r.stdout.split('\n').filter((l) => l !== '')
}

/** Changed files: the working tree's against HEAD, untracked ones, and those since `base` if given. */
export function changedFiles(base?: string): string[] {
  const files = new Set([...git(['diff', '--name-only', 'HEAD']), ...git(['ls-files', '--others', '--exclude-standard'])])
  if (base) for (const f of git(['diff', '--name-only', `${base}...HEAD`])) files.add(f)
  return [...files].sort()
}

/** Each test file (all of them unless named) with the local files it reaches through its imports (itself included). */
export async function reachedByTests(tests = (readdirSync(join(root, 'test'), { recursive: true }) as string[]).filter((f) => f.endsWith('.test.ts')).map((f) => `test/${f}`)): Promise<Map<string, Set<string>>> {
  const metafile = await metafileOf(tests, root)
  const next = new Map<string, string[]>()
  for (const [file, input] of Object.entries(metafile.inputs)) next.set(file, input.imports.filter((i) => !i.external).map((i) => i.path))
  const out = new Map<string, Set<string>>()
  for (const test of tests) {
    const seen = new Set([test])
    const queue = [test]
    while (queue.length > 0) for (const g of next.get(queue.shift() as string) ?? []) if (!seen.has(g)) queue.push(g), seen.add(g)
    out.set(test, seen)
  }
  return out
}

/** The test files a set of changed files can affect, sorted. */
export function affectedTests(changed: readonly string[], reached: Map<string, Set<string>>): string[] {
  const out = new Set<string>()
  for (const [test, files] of reached) {
    for (const c of changed) {
      if (files.has(c)) out.add(test)
      for (const r of READS) if (r.changed.test(c) && [...files].some(r.reads)) out.add(test)
    }
  }
  return [...out].sort()
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const list = args.includes('--list')
  const base = args.find((a) => !a.startsWith('--'))
  const changed = changedFiles(base)
  const tests = affectedTests(changed, await reachedByTests())
  process.stderr.write(`${changed.length} changed file(s), ${tests.length} affected test file(s)\n`)
  if (list || tests.length === 0) {
    for (const t of tests) process.stdout.write(`${relative(root, join(root, t))}\n`)
  } else {
    const tap = spawnSync(process.execPath, [join(root, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs'), '--disable-coverage', ...tests], { cwd: root, stdio: 'inherit' })
    process.exitCode = tap.status ?? 1
  }
}
