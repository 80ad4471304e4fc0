/**
 * The `-f` inputs of `render`, `lint` and `diff`: files, directories (`-R` for their
 * subdirectories), or standard input, read as kubectl reads them, and split into Memcacheds and
 * the other documents (which `render` passes through unchanged, as a KRM function does, so that
 * `kustomize build | memcached-operator render -f - | kubectl apply -f -` works).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { API_VERSION, checkMemcached, forEachManifest, KIND, type Memcached } from '../api/memcached.ts'
import { RenderError } from '../render/errors.ts'
import { isPlainMap } from '../render/values.ts'
import { UsageError, type CliIO } from './io.ts'

/** The extensions kubectl reads in a directory (kubectl's resource builder: FileExtensions). */
const EXTENSIONS = ['.json', '.yaml', '.yml']

/** kustomize's own file in a directory of manifests: the directory's recipe, not a manifest. */
const KUSTOMIZATION = new Set(['kustomization.yaml', 'kustomization.yml', 'Kustomization'])

/** What the errno of a file that cannot be read means, in words. */
const ERRNO: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ENOTDIR: 'a path component is not a directory',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
  ELOOP: 'too many symbolic links',
}

/** `file: cannot read: reason (ERRNO)`: the reason in words, and the code for a search. */
export function unreadable(file: string, err: unknown): RenderError {
  const code = (err as NodeJS.ErrnoException).code
  return new RenderError('input', [`${file}: cannot read: ${code !== undefined && ERRNO[code] ? `${ERRNO[code]} (${code})` : (code ?? (err as Error).message)}`])
}

/** The files of a directory kubectl would read, sorted; with `recursive`, those below too. */
function filesOf(dir: string, shown: string, recursive: boolean): { path: string; shown: string }[] {
  const out: { path: string; shown: string }[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const path = join(dir, entry.name)
    const name = join(shown, entry.name)
    const isDir = entry.isDirectory() || (entry.isSymbolicLink() && statSync(path, { throwIfNoEntry: false })?.isDirectory() === true)
    if (isDir) {
      if (recursive) out.push(...filesOf(path, name, true))
    } else if (EXTENSIONS.some((e) => entry.name.endsWith(e)) && !KUSTOMIZATION.has(entry.name)) out.push({ path, shown: name })
  }
  return out
}

/** Reads `-f` inputs; `-` is standard input (once), a directory its manifests (`recursive`: and its subdirectories'). */
export async function readInputs(files: string[], io: CliIO, recursive = false): Promise<{ source: string; text: string }[]> {
  if (files.length === 0) throw new UsageError('no input: give -f FILE (or -f - for standard input)')
  const out: { source: string; text: string }[] = []
  let stdinRead = false
  for (const f of files) {
    if (f === '-') {
      if (stdinRead) throw new UsageError('-f - given more than once')
      stdinRead = true
      out.push({ source: '<stdin>', text: await io.stdin() })
      continue
    }
    const path = resolve(io.cwd, f)
    try {
      if (statSync(path).isDirectory()) {
        const inDir = filesOf(path, f, recursive)
        if (inDir.length === 0) throw new RenderError('input', [`${f}: a directory without ${EXTENSIONS.join(', ')} files${recursive ? '' : ' (-R reads its subdirectories too)'}`])
        for (const file of inDir) out.push({ source: file.shown, text: readFileSync(file.path, 'utf8') })
      } else out.push({ source: f, text: readFileSync(path, 'utf8') })
    } catch (err) {
      if (err instanceof RenderError) throw err
      throw unreadable(f, err)
    }
  }
  return out
}

/** A document of the input: a Memcached, or another object passed through. */
export type InputDocument = { memcached: Memcached; source: string } | { other: Record<string, unknown>; source: string }

/**
 * The documents of one input, in order (empty documents skipped; a `List` unpacked). A Memcached
 * must be valid; another object needs apiVersion, kind and metadata.name (anything else is not a
 * manifest: a values file given to -f, say). Every problem is listed, with its file and document.
 * @throws RenderError ('input')
 */
export function parseDocuments(text: string, source: string): InputDocument[] {
  const out: InputDocument[] = []
  const problems: string[] = []
  forEachManifest(text, source, problems, (item, at) => {
    if (isPlainMap(item) && (item.kind === KIND || item.apiVersion === API_VERSION)) {
      const problem = checkMemcached(item)
      if (problem) problems.push(`${at}: ${problem}`)
      else out.push({ memcached: item as unknown as Memcached, source })
      return
    }
    const meta = isPlainMap(item) ? item.metadata : undefined
    if (!isPlainMap(item) || typeof item.apiVersion !== 'string' || typeof item.kind !== 'string' || !isPlainMap(meta) || typeof meta.name !== 'string' || meta.name === '') {
      const hint = isPlainMap(item) && item.apiVersion === undefined && item.kind === undefined ? ' (a values file is given with --values, not -f)' : ''
      problems.push(`${at}: not a Kubernetes object: expected apiVersion ${API_VERSION} and kind ${KIND}, or another object with apiVersion, kind and metadata.name to pass through${hint}`)
      return
    }
    out.push({ other: item, source })
  })
  if (problems.length > 0) throw new RenderError('input', problems)
  return out
}
