//! Draws the curves `driver growth --json FILE` writes as one PNG each
//! (`<dir>/growth-<id>.png`): both axes logarithmic, one line per server, so a cost linear
//! in the work is a line of slope one and a flat cost a horizontal line.
//!
//! ```text
//! growth-plot <curves.json> <dir> [font.ttf]
//! growth-plot --rss <soak-rss.csv> <out.png> [font.ttf]
//! ```
//!
//! `--rss` draws the resident memory the cluster soak (`tests/tests/soak_cluster.rs`)
//! sampled: its CSV (`t_s,phase,replica1_kib,...`) as one line per replica over time, both
//! axes linear, with the end of the load marked.
//!
//! Text is drawn with a TrueType font read at run time (DejaVu Sans unless a path is given).

use std::error::Error;
use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;

const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

fn color(name: &str) -> RGBColor {
    match name {
        "ours" => RGBColor(0x1f, 0x77, 0xb4),
        "ours+auth" => RGBColor(0x9e, 0x3a, 0xc8),
        "rmcp" => RGBColor(0xd6, 0x27, 0x28),
        "floor" => RGBColor(0x55, 0x55, 0x55),
        "single" => RGBColor(0x1f, 0x77, 0xb4),
        _ => RGBColor(0x2c, 0xa0, 0x2c),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let rss = args.first().is_some_and(|a| a == "--rss");
    if rss {
        args.remove(0);
    }
    let (Some(json), Some(dir)) = (args.first(), args.get(1)) else {
        eprintln!("usage: growth-plot <curves.json> <dir> [font.ttf]");
        eprintln!("       growth-plot --rss <soak-rss.csv> <out.png> [font.ttf]");
        std::process::exit(2);
    };
    let font = args.get(2).map_or(DEFAULT_FONT, String::as_str);
    let bytes: &'static [u8] = Box::leak(std::fs::read(font)?.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{font} is not a usable TrueType font"))?;
    if rss {
        draw_rss(&std::fs::read_to_string(json)?, Path::new(dir))?;
        println!("{dir}");
        return Ok(());
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(json)?)?;
    std::fs::create_dir_all(dir)?;
    for curve in doc["curves"].as_array().into_iter().flatten() {
        let id = curve["id"].as_str().unwrap_or("curve");
        let path = Path::new(dir).join(format!("growth-{id}.png"));
        if curve.get("bars").is_some() {
            draw_cluster(curve, &path)?;
        } else {
            let xs: Vec<f64> = curve["x"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .collect();
            if xs.len() < 2 {
                continue; // a single point: the table says it
            }
            draw_curve(curve, &xs, &path)?;
        }
        println!("{}", path.display());
    }
    Ok(())
}

fn draw_curve(curve: &Value, xs: &[f64], path: &Path) -> Result<(), Box<dyn Error>> {
    let series: Vec<(String, Vec<(f64, f64)>)> = curve["series"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let name = s["name"].as_str().unwrap_or("?").to_owned();
            let pts = xs
                .iter()
                .zip(s["y"].as_array().into_iter().flatten())
                .filter_map(|(&x, y)| y.as_f64().filter(|y| *y > 0.0).map(|y| (x, y)))
                .collect();
            (name, pts)
        })
        .filter(|(_, pts): &(String, Vec<(f64, f64)>)| !pts.is_empty())
        .collect();
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
    if lo > hi {
        return Ok(());
    }
    let (xlo, xhi) = (xs[0].min(xs[xs.len() - 1]), xs[0].max(xs[xs.len() - 1]));

    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = curve["title"].as_str().unwrap_or("");
    let mut chart = ChartBuilder::on(&root)
        .caption(wrap(title, 90), ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(
            (xlo / 1.5..xhi * 1.5).log_scale(),
            (lo / 2.0..hi * 2.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc(curve["x_label"].as_str().unwrap_or(""))
        .y_desc(curve["y_label"].as_str().unwrap_or(""))
        .x_label_formatter(&|x| short(*x))
        .y_label_formatter(&|y| short(*y))
        .label_style(("sans-serif", 14))
        .draw()?;
    for (name, pts) in &series {
        let c = color(name);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present()?;
    Ok(())
}

/// The cluster comparison: CPU per request, single process and cluster replica, per era.
fn draw_cluster(curve: &Value, path: &Path) -> Result<(), Box<dyn Error>> {
    let bars: Vec<(String, f64, f64)> = curve["bars"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| {
            Some((
                b["era"].as_str()?.to_owned(),
                b["single"].as_f64()?,
                b["cluster"].as_f64()?,
            ))
        })
        .collect();
    if bars.is_empty() {
        return Ok(());
    }
    let hi = bars.iter().map(|b| b.1.max(b.2)).fold(0.0, f64::max) * 1.25;
    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = bars.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            wrap(curve["title"].as_str().unwrap_or(""), 90),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n, 0.0..hi)?;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.01 && i < names.len() {
                names[i].clone()
            } else {
                String::new()
            }
        })
        .y_desc("server CPU per request (µs)")
        .x_desc("protocol era")
        .label_style(("sans-serif", 14))
        .draw()?;
    for (k, (label, c)) in [
        ("single process", color("single")),
        ("cluster replica", color("cluster")),
    ]
    .into_iter()
    .enumerate()
    {
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let v = if k == 0 { b.1 } else { b.2 };
                let x0 = i as f64 + 0.15 + 0.35 * k as f64;
                Rectangle::new([(x0, 0.0), (x0 + 0.33, v)], c.filled())
            }))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()));
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present()?;
    Ok(())
}

/// The soak's RSS samples: one line per replica (MiB over minutes, or seconds for a run
/// under ten minutes), the end of the load as a vertical rule.
fn draw_rss(csv: &str, path: &Path) -> Result<(), Box<dyn Error>> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let names: Vec<String> = header
        .iter()
        .skip(2)
        .map(|h| h.trim_end_matches("_kib").replace("replica", "replica "))
        .collect();
    let rows: Vec<(f64, bool, Vec<f64>)> = lines
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let t = cells.first()?.parse().ok()?;
            let load = *cells.get(1)? == "load";
            let kib = cells[2..]
                .iter()
                .map(|c| c.parse::<f64>().unwrap_or(0.0) / 1024.0)
                .collect();
            Some((t, load, kib))
        })
        .collect();
    if rows.len() < 2 {
        return Err("fewer than two samples".into());
    }
    let end = rows.last().map_or(1.0, |r| r.0);
    let minutes = end >= 600.0;
    let scale = if minutes { 60.0 } else { 1.0 };
    let load_end = rows.iter().filter(|r| r.1).map(|r| r.0).fold(0.0, f64::max) / scale;
    let hi = rows
        .iter()
        .flat_map(|r| r.2.iter().copied())
        .fold(0.0, f64::max)
        * 1.25;
    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "Cluster soak: RSS of three replicas behind nginx ({:.0} {} of load, then expiry)",
        load_end,
        if minutes { "min" } else { "s" }
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(wrap(&title, 90), ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..end / scale, 0.0..hi)?;
    chart
        .configure_mesh()
        .x_desc(if minutes { "minutes" } else { "seconds" })
        .y_desc("RSS (MiB)")
        .label_style(("sans-serif", 14))
        .draw()?;
    let palette = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0x9e, 0x3a, 0xc8),
    ];
    for (i, name) in names.iter().enumerate() {
        let c = palette[i % palette.len()];
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| r.2.get(i).map(|y| (r.0 / scale, *y)))
            .filter(|p| p.1 > 0.0)
            .collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(load_end, 0.0), (load_end, hi)],
            BLACK.mix(0.6).stroke_width(2),
        )))?
        .label("end of the load")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.5)));
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present()?;
    Ok(())
}

/// 1,500 as "1.5k", 2,000,000 as "2M", small values with a few digits.
/// The legend every plot draws (boxed, semi-opaque) at `position`.
fn legend<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged,
    Y: Ranged,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}

fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// The title on at most two lines.
fn wrap(s: &str, width: usize) -> String {
    if s.len() <= width {
        return s.to_owned();
    }
    let cut = s[..width].rfind(' ').unwrap_or(width);
    format!("{}\n{}", &s[..cut], s[cut..].trim_start())
}
