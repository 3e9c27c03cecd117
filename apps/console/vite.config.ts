import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * The console's build (interface section 23): served by the gateway at `/console/`, so every URL in the output starts
 * there; hashed files under `assets/` (the gateway caches only those for good). No inline script or style in the
 * output, so the gateway's Content-Security-Policy needs no 'unsafe-inline'.
 */
export default defineConfig({
  root: here('.'),
  base: '/console/',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: here('../../dist/console'),
    emptyOutDir: true,
    sourcemap: false,
    // No inline data: URLs for small assets: every asset is a file the CSP admits as 'self'.
    assetsInlineLimit: 0,
    // The polyfill is for browsers without modulepreload; every browser the console targets has it.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1500,
  },
});
