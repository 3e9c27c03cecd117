import type { AnchorHTMLAttributes, ImgHTMLAttributes } from 'react';
import ReactMarkdown, { type Components } from 'react-markdown';
import { safeLinkUrl } from './safe-url';

/**
 * Untrusted text (model and tool output) as Markdown. react-markdown builds React elements, never HTML strings: raw
 * HTML in the text is shown as text (`skipHtml` off, no rehype-raw), so `<img onerror=...>` is inert characters.
 * Links keep only absolute http(s) and mailto URLs (safeLinkUrl), open in a new tab without opener or referrer.
 * Images are never loaded: a remote image would tell its author who read the output and when (and the CSP would
 * refuse it anyway); it is shown as a link to its URL, or as its alt text.
 */
const COMPONENTS: Components = {
  a({ href, children }: AnchorHTMLAttributes<HTMLAnchorElement>) {
    const url = safeLinkUrl(href);
    if (url === null) return <span className="unsafe-link">{children}</span>;
    return (
      <a href={url} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    );
  },
  img({ src, alt }: ImgHTMLAttributes<HTMLImageElement>) {
    const url = safeLinkUrl(typeof src === 'string' ? src : null);
    const label = `image: ${alt === undefined || alt === '' ? 'untitled' : alt}`;
    if (url === null) return <span className="image-placeholder">[{label}]</span>;
    return (
      <a href={url} target="_blank" rel="noopener noreferrer nofollow" className="image-placeholder">
        [{label}]
      </a>
    );
  },
};

/** The default transform would keep relative and some other URLs; this one keeps what safeLinkUrl keeps. */
function urlTransform(url: string): string {
  return safeLinkUrl(url) ?? '';
}

export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown components={COMPONENTS} urlTransform={urlTransform} skipHtml={false}>
        {text}
      </ReactMarkdown>
    </div>
  );
}
