/**
 * Assembles the operator image's file tree the way the Dockerfile builds it, without a Docker
 * engine, and starts it: `memcached-operator --version`, `run --help` and `lint` from the tree.
 *
 *   node test/image/assemble.ts [--out DIR]
 *
 * The Dockerfile itself is interpreted (FROM … AS, WORKDIR, COPY [--from], RUN, ENV, USER, EXPOSE,
 * ENTRYPOINT), with the build context filtered by .dockerignore, so the tree cannot drift from the
 * image: a COPY of a file the context excludes fails here as it fails in `docker build`. What the
 * base images provide comes from this machine: RUN uses its `sh` and npm, and the ENTRYPOINT's
 * node is this node (Node 24). The tree is checked to run with nothing writable: os.tmpdir() and
 * HOME point where no directory can be created (a read-only root filesystem without /tmp).
 *
 * Prints one line per step; exits 1 on the first failure. The tree is removed unless --out is given.
 */
import { execFileSync, type ExecFileSyncOptions } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** One instruction of a Dockerfile. */
export interface Instruction {
  op: string
  args: string
  line: number
}

/** The instructions of a Dockerfile: comments dropped, `\` continuations joined. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = []
  let pending = ''
  let start = 0
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (pending === '' && (line === '' || line.startsWith('#'))) continue
    if (pending === '') start = i + 1
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `
      continue
    }
    const full = (pending + line).trim()
    pending = ''
    const m = /^(\S+)\s*(.*)$/.exec(full)
    if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]!, line: start })
  }
  return out
}

/** A .dockerignore pattern as a RegExp, as Docker reads it (Go's filepath.Match plus `**`; `*` matches dotfiles too). */
function patternRegExp(pattern: string): RegExp {
  let re = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === '*' && pattern[i + 1] === '*') {
      // `**/` matches any number of directories, `**` at the end anything.
      re += pattern[i + 2] === '/' ? '(?:.*/)?' : '.*'
      i += pattern[i + 2] === '/' ? 2 : 1
    } else if (c === '*') re += '[^/]*'
    else if (c === '?') re += '[^/]'
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${re}$`)
}

/** Whether `.dockerignore` patterns exclude `path` (relative, `/`-separated): the last matching pattern wins, and a pattern matching a parent directory matches its contents. */
export function ignored(patterns: string[], path: string): boolean {
  const parts = path.split('/')
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'))
  let excluded = false
  for (const p of patterns) {
    const negate = p.startsWith('!')
    const pattern = posix.normalize(negate ? p.slice(1) : p).replace(/^\/+|\/+$/g, '')
    const re = patternRegExp(pattern)
    if (prefixes.some((prefix) => re.test(prefix))) excluded = !negate
  }
  return excluded
}

/** The patterns of a .dockerignore file. */
export function dockerignorePatterns(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

/** The files of the build context (relative paths), as `docker build .` sends them. */
export function contextFiles(root: string, patterns: string[]): string[] {
  const files: string[] = []
  const negations = patterns.filter((p) => p.startsWith('!')).map((p) => p.slice(1).replace(/^\/+/, ''))
  const walk = (rel: string): void => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`
      if (entry.isDirectory()) {
        // A directory is skipped only when nothing inside it can be re-included.
        if (ignored(patterns, path) && !negations.some((n) => n.startsWith(`${path}/`) || n.startsWith('*'))) continue
        walk(path)
      } else if (!ignored(patterns, path)) files.push(path)
    }
  }
  walk('')
  return files.sort()
}

interface Stage {
  name: string
  base: string
  root: string
  workdir: string
  env: Record<string, string>
  user?: string
  entrypoint?: string[]
  expose: string[]
}

/** Splits `COPY [--from=x] [--chown=…] src… dest`. */
function copyArgs(args: string): { from?: string; sources: string[]; dest: string } {
  const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/)
  let from: string | undefined
  const rest: string[] = []
  for (const w of words) {
    if (w.startsWith('--from=')) from = w.slice('--from='.length)
    else if (w.startsWith('--chown=') || w.startsWith('--chmod=')) continue
    else if (w.startsWith('--')) throw new Error(`COPY flag ${w} is not supported by the assembler`)
    else rest.push(w)
  }
  if (rest.length < 2) throw new Error(`COPY ${args}: needs a source and a destination`)
  return { ...(from ? { from } : {}), sources: rest.slice(0, -1), dest: rest[rest.length - 1]! }
}

/** The result of assembling: the final stage's tree and how it starts. */
export interface Assembled {
  /** Directory standing for the final image's `/`. */
  root: string
  workdir: string
  env: Record<string, string>
  user: string | undefined
  entrypoint: string[]
  expose: string[]
  bases: string[]
}

/** Builds every stage of `dockerfile` under `dir`; returns the last one. */
export function assemble(dir: string, dockerfile = join(ROOT, 'Dockerfile'), context = ROOT, log: (line: string) => void = () => {}): Assembled {
  const patterns = existsSync(join(context, '.dockerignore')) ? dockerignorePatterns(readFileSync(join(context, '.dockerignore'), 'utf8')) : []
  const files = new Set(contextFiles(context, patterns))
  const stages: Stage[] = []
  let stage: Stage | undefined
  const inStage = (s: Stage, p: string) => join(s.root, posix.resolve(s.workdir, p))
  for (const ins of parseDockerfile(readFileSync(dockerfile, 'utf8'))) {
    const where = `Dockerfile:${ins.line}`
    if (ins.op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)
      if (!m) throw new Error(`${where}: FROM ${ins.args}`)
      stage = { name: m[2] ?? String(stages.length), base: m[1]!, root: join(dir, `stage-${stages.length}`), workdir: '/', env: {}, expose: [] }
      mkdirSync(stage.root, { recursive: true })
      stages.push(stage)
      log(`FROM ${stage.base}${m[2] ? ` AS ${m[2]}` : ''}`)
      continue
    }
    if (!stage) throw new Error(`${where}: ${ins.op} before FROM`)
    const s = stage
    switch (ins.op) {
      case 'WORKDIR':
        s.workdir = posix.resolve(s.workdir, ins.args)
        mkdirSync(join(s.root, s.workdir), { recursive: true })
        break
      case 'ENV': {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(ins.args)
        if (!m) throw new Error(`${where}: ENV ${ins.args} (use KEY=value)`)
        s.env[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1')
        break
      }
      case 'COPY': {
        const { from, sources, dest } = copyArgs(ins.args)
        const target = inStage(s, dest)
        const intoDir = dest.endsWith('/') || sources.length > 1
        for (const src of sources) {
          let origin: string
          if (from !== undefined) {
            const other = stages.find((x) => x.name === from)
            if (!other || other === s) throw new Error(`${where}: COPY --from=${from}: no earlier stage of that name`)
            origin = inStage(other, src)
            if (!existsSync(origin)) throw new Error(`${where}: COPY --from=${from} ${src}: not in that stage`)
            cpSync(origin, intoDir ? join(target, posix.basename(src)) : target, { recursive: true })
          } else {
            const rel = posix.normalize(src).replace(/^\.?\/+/, '').replace(/\/+$/, '')
            const inside = [...files].filter((f) => f === rel || f.startsWith(`${rel}/`))
            if (inside.length === 0) throw new Error(`${where}: COPY ${src}: not in the build context (missing, or excluded by .dockerignore)`)
            for (const f of inside) {
              // A directory's contents go into dest; a file goes to dest (or into it).
              const to = f === rel ? (intoDir ? join(target, posix.basename(f)) : target) : join(target, f.slice(rel.length + 1))
              mkdirSync(dirname(to), { recursive: true })
              cpSync(join(context, f), to)
            }
          }
        }
        log(`COPY ${ins.args}`)
        break
      }
      case 'RUN': {
        if (s === stages[stages.length - 1] && s.base.includes('distroless')) throw new Error(`${where}: RUN in a distroless stage (no shell)`)
        log(`RUN ${ins.args}`)
        const opts: ExecFileSyncOptions = { cwd: join(s.root, s.workdir), stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...s.env } }
        try {
          execFileSync('sh', ['-c', ins.args], opts)
        } catch (err) {
          const e = err as { stderr?: Buffer; status?: number }
          throw new Error(`${where}: RUN failed (exit ${e.status}): ${e.stderr?.toString() ?? ''}`)
        }
        break
      }
      case 'USER':
        s.user = ins.args
        break
      case 'EXPOSE':
        s.expose.push(...ins.args.split(/\s+/))
        break
      case 'ENTRYPOINT':
        if (!ins.args.startsWith('[')) throw new Error(`${where}: ENTRYPOINT must be the exec (JSON) form, so that SIGTERM reaches node`)
        s.entrypoint = JSON.parse(ins.args) as string[]
        break
      case 'LABEL':
      case 'ARG':
        break
      default:
        throw new Error(`${where}: ${ins.op} is not supported by the assembler`)
    }
  }
  const last = stages[stages.length - 1]
  if (!last?.entrypoint) throw new Error('Dockerfile: the final stage has no ENTRYPOINT')
  return { root: last.root, workdir: last.workdir, env: last.env, user: last.user, entrypoint: last.entrypoint, expose: last.expose, bases: stages.map((x) => x.base) }
}

/** Runs the image's ENTRYPOINT (node of this machine for the image's node) with `args` in place of its trailing `run` when `replaceRun`. */
export function runImage(image: Assembled, args: string[], opts: { replaceRun?: boolean; env?: Record<string, string> } = {}): string {
  const [exe, ...rest] = image.entrypoint
  if (!exe || !/(^|\/)node$/.test(exe)) throw new Error(`ENTRYPOINT ${JSON.stringify(image.entrypoint)} does not start node`)
  const mapped = rest.map((a) => (a.startsWith('/') && existsSync(join(image.root, a)) ? join(image.root, a) : a))
  if (opts.replaceRun) {
    if (mapped[mapped.length - 1] !== 'run') throw new Error('the ENTRYPOINT does not end in `run`')
    mapped.pop()
  }
  // Nowhere to write: a path below a regular file cannot become a directory, even for root.
  const blocked = join(image.root, '.not-a-directory')
  writeFileSync(blocked, '')
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', ...image.env, TMPDIR: join(blocked, 'tmp'), HOME: join(blocked, 'home'), ...opts.env }
  return execFileSync(process.execPath, [...mapped, ...args], { cwd: join(image.root, image.workdir), env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

async function main(argv: string[]): Promise<number> {
  const outAt = argv.indexOf('--out')
  const out = outAt >= 0 ? argv[outAt + 1] : undefined
  const dir = out ? resolve(out) : mkdtempSync(join(tmpdir(), 'mc-image-'))
  if (out) {
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
  }
  try {
    const image = assemble(dir, undefined, undefined, (l) => console.log(`step: ${l}`))
    const user = image.user ?? ''
    if (!/^[1-9][0-9]*(:[0-9]+)?$/.test(user)) throw new Error(`USER ${JSON.stringify(user)}: must be a numeric, non-root uid`)
    console.log(`user: ${user}`)
    console.log(`entrypoint: ${JSON.stringify(image.entrypoint)}`)
    console.log(`version: ${runImage(image, ['--version'], { replaceRun: true }).trim()}`)
    const help = runImage(image, ['--help'])
    if (!/--leader-elect/.test(help)) throw new Error(`run --help does not describe run:\n${help}`)
    console.log(`run --help: ${help.split('\n')[0]}`)
    console.log(`lint: ${runImage(image, ['lint'], { replaceRun: true }).trim().split('\n').pop()}`)
    const size = (p: string): number => {
      const st = statSync(p)
      return st.isDirectory() ? readdirSync(p).reduce((a, e) => a + size(join(p, e)), 0) : st.size
    }
    console.log(`tree: ${join(image.root)} (${(size(image.root) / 1e6).toFixed(1)} MB)`)
    console.log('ok')
    return 0
  } catch (err) {
    console.error(`assemble: ${err instanceof Error ? err.message : String(err)}`)
    return 1
  } finally {
    if (!out) rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = await main(process.argv.slice(2))
