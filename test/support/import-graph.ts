/**
 * The import graph as esbuild sees it: the metafile of a bundle of `entryPoints` (static and
 * dynamic imports as Node resolves them, packages left out), written nowhere. test/house.test.ts
 * reads the product's graph from it, test/support/affected.ts the tests'.
 */
import { build, type Metafile } from 'esbuild'

export async function metafileOf(entryPoints: string[], root: string): Promise<Metafile> {
  const result = await build({
    absWorkingDir: root,
    entryPoints,
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outdir: '/nonexistent',
    logLevel: 'silent',
  })
  return result.metafile
}
