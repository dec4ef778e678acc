//! The HTML report (`weft report`, `weft repro -o DIR`): one self-contained page from any result
//! documents. Nothing in it is fetched: the style is inline, the figures are inline SVG (drawn
//! by [`crate::plot`]), there are no scripts, and the icon is an empty `data:` URL so that a
//! browser does not ask a server for `/favicon.ico`.
//!
//! A `repro` document (`weft repro --json`) gives the per-study summary at the top, figures
//! drawn like the studies' own (see [`crate::html_figures`]), and a table per study of every
//! item with the paper's value, each engine's, the miss, the verdict, its reason and the
//! scenario behind it. Any other document is drawn with the figure `weft plot` gives it.

use std::fmt::Write as _;

use crate::html_figures::{self, Drawn};
use crate::html_style::STYLE;
use crate::html_tables;
use crate::plot;
use crate::repro_doc::{self, KIND};
use crate::schema::ResultDoc;

/// Why a page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// Nothing was given.
    #[error("no result documents to report on")]
    Empty,
    /// A `repro` document whose samples or summary do not have the repro layout.
    #[error("a `repro` document that does not read as one: {0}")]
    Repro(#[from] serde_json::Error),
}

/// The page for `docs`, in the order given: repro documents first, then the others.
pub fn page(docs: &[ResultDoc]) -> Result<String, HtmlError> {
    if docs.is_empty() {
        return Err(HtmlError::Empty);
    }
    let mut body = String::new();
    let mut figure_no = 0usize;
    let mut toc: Vec<(String, String)> = Vec::new();
    for doc in docs.iter().filter(|d| d.kind == KIND) {
        let (items, summary) = repro_doc::read(doc)?;
        let about = doc.params.get("scenarios").cloned().unwrap_or_default();
        body.push_str(&html_tables::summary(&summary, &items));
        toc.push(("summary".into(), "Summary per study".into()));
        let drawn = html_figures::all(&items);
        let undrawn = html_figures::undrawn(&items);
        if !drawn.is_empty() || !undrawn.is_empty() {
            body.push_str("<section id=\"figures\"><h2>Figures</h2>\n");
            for d in &drawn {
                body.push_str(&figure_html(d, &mut figure_no));
            }
            if !undrawn.is_empty() {
                body.push_str("<p>Not drawn: figures of the studies this page has no drawing for yet, with their items and verdicts.</p>\n<ul class=\"notes\">\n");
                for (what, ids) in &undrawn {
                    let _ = writeln!(body, "<li>{}: {}</li>", esc(what), esc(&ids.join(", ")));
                }
                body.push_str("</ul>\n");
            }
            body.push_str("</section>\n");
            toc.push(("figures".into(), "Figures".into()));
        }
        for s in &summary.studies {
            body.push_str(&html_tables::study(s, &items));
            toc.push((
                format!("study-{}", s.study),
                format!("{} {}", s.study, s.name),
            ));
        }
        body.push_str(&html_tables::scenarios(&items, &about));
        toc.push(("scenarios".into(), "Scenarios".into()));
    }
    let others: Vec<&ResultDoc> = docs.iter().filter(|d| d.kind != KIND).collect();
    if !others.is_empty() {
        body.push_str("<section id=\"measurements\"><h2>Measurements</h2>\n");
        for doc in others {
            body.push_str(&measurement(doc, &mut figure_no));
        }
        body.push_str("</section>\n");
        toc.push(("measurements".into(), "Measurements".into()));
    }
    let mut nav = String::from("<nav><ul>");
    for (id, title) in &toc {
        let _ = write!(nav, "<li><a href=\"#{}\">{}</a></li>", esc(id), esc(title));
    }
    nav.push_str("</ul></nav>\n");
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>weft report</title>\n<style>\n{STYLE}</style>\n\
         </head>\n<body>\n<header><h1>weft report</h1><p class=\"sub\">{}</p></header>\n{nav}<main>\n{body}</main>\n\
         </body>\n</html>\n",
        esc(&origin(docs))
    ))
}

/// One line on what the page was made from.
fn origin(docs: &[ResultDoc]) -> String {
    let kinds: Vec<String> = docs.iter().map(|d| d.kind.clone()).collect();
    let version = docs.first().map(|d| d.weft.clone()).unwrap_or_default();
    format!(
        "weft {version}: {} result document(s): {}",
        docs.len(),
        kinds.join(", ")
    )
}

/// A figure with its caption, its SVG's ids made unique on the page.
fn figure_html(d: &Drawn, figure_no: &mut usize) -> String {
    *figure_no += 1;
    format!(
        "<figure id=\"fig{n}\">\n{}\n<figcaption><b>Figure {n}.</b> {}</figcaption>\n</figure>\n",
        inline_svg(&plot::render_svg(&d.figure), *figure_no),
        d.caption,
        n = *figure_no
    )
}

/// An SVG document as an element of the page: the clip paths of each figure get ids of their
/// own (every figure numbers its own from zero).
pub fn inline_svg(svg: &str, figure: usize) -> String {
    svg.replace("id=\"clip", &format!("id=\"f{figure}clip"))
        .replace("url(#clip", &format!("url(#f{figure}clip"))
}

/// Any other result document: its kind, engine and summary, and the figure `weft plot` draws.
fn measurement(doc: &ResultDoc, figure_no: &mut usize) -> String {
    let mut out = format!(
        "<article class=\"measurement\"><h3>{} <span class=\"engine\">({})</span></h3>\n",
        esc(&doc.kind),
        esc(&serde_json::to_value(doc.engine)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default())
    );
    if let Some(map) = doc.summary.as_object() {
        let shown: Vec<String> = map
            .iter()
            .filter(|(_, v)| v.is_number() || v.is_string())
            .take(12)
            .map(|(k, v)| format!("<code>{}</code> {}", esc(k), esc(&v.to_string())))
            .collect();
        if !shown.is_empty() {
            let _ = writeln!(out, "<p class=\"sub\">{}</p>", shown.join(" · "));
        }
    }
    match plot::figure_for(doc) {
        Ok(fig) if fig.mark_count() > 0 => {
            let drawn = Drawn {
                figure: fig,
                caption: format!("The `{}` result as `weft plot` draws it.", esc(&doc.kind)),
            };
            out.push_str(&figure_html(&drawn, figure_no));
        }
        Ok(_) | Err(_) => out.push_str("<p>Nothing in this result can be drawn.</p>\n"),
    }
    out.push_str("</article>\n");
    out
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    plot::svg::esc(s)
}

#[cfg(test)]
mod tests;
