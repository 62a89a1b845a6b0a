// A line chart of values per day (uPlot), one line per series, redrawn on resize and on theme change.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useTheme } from '../theme';

export interface ChartSeries {
  label: string;
  values: number[];
}

const PALETTE = ['#2563eb', '#16a34a', '#d97706', '#db2777', '#7c3aed', '#0891b2', '#dc2626', '#65a30d'];

export default function TimeChart(props: { days: number[]; series: ChartSeries[]; label: string; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const theme = useTheme();
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const css = getComputedStyle(document.documentElement);
    const muted = css.getPropertyValue('--muted').trim() || '#666';
    const grid = css.getPropertyValue('--border').trim() || '#ddd';
    const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts: uPlot.Options = {
      width: Math.max(240, el.clientWidth),
      height: props.height ?? 220,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [
        { ...axis, space: 60 },
        { ...axis, size: 56 },
      ],
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
      series: [
        {},
        ...props.series.map((s, i) => ({
          label: s.label,
          stroke: PALETTE[i % PALETTE.length],
          width: 2,
          points: { show: true, size: 6, fill: PALETTE[i % PALETTE.length] },
        })),
      ],
    };
    const plot = new uPlot(opts, [props.days, ...props.series.map((s) => s.values)], el);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, el.clientWidth), height: props.height ?? 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [props.days, props.series, props.height, theme]);
  return <div ref={box} class="chart" role="img" aria-label={props.label} />;
}
