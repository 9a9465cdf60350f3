// The 1D and 2D Laplacians in CSR, as NVIDIA's sparse samples build their test matrices.
#pragma once

#include <vector>

// The 1D Laplacian of n rows (2 on the diagonal, -1 beside it: tridiagonal). Fills the CSR arrays
// and returns the number of nonzeros (3 n - 2).
template <typename T>
int laplacian_1d(int n, std::vector<int>& offsets, std::vector<int>& columns,
                 std::vector<T>& values) {
  offsets.assign(n + 1, 0);
  columns.clear();
  values.clear();
  for (int row = 0; row < n; ++row) {
    offsets[row] = static_cast<int>(columns.size());
    for (int col = row - 1; col <= row + 1; ++col) {
      if (col < 0 || col >= n) continue;
      columns.push_back(col);
      values.push_back(col == row ? T(2) : T(-1));
    }
  }
  offsets[n] = static_cast<int>(columns.size());
  return offsets[n];
}

// The 2D 5-point Laplacian on a grid x grid mesh (4 on the diagonal, -1 to each of the up to four
// neighbours, rows in mesh order). Fills the CSR arrays and returns the number of nonzeros
// (5 n - 4 grid for n = grid^2 rows).
template <typename T>
int laplacian_2d(int grid, std::vector<int>& offsets, std::vector<int>& columns,
                 std::vector<T>& values) {
  const int n = grid * grid;
  offsets.assign(n + 1, 0);
  columns.clear();
  values.clear();
  for (int row = 0; row < n; ++row) {
    offsets[row] = static_cast<int>(columns.size());
    const int r = row / grid, c = row % grid;
    const int neighbours[5] = {r > 0 ? row - grid : -1, c > 0 ? row - 1 : -1, row,
                               c + 1 < grid ? row + 1 : -1, r + 1 < grid ? row + grid : -1};
    for (int col : neighbours) {
      if (col < 0) continue;
      columns.push_back(col);
      values.push_back(col == row ? T(4) : T(-1));
    }
  }
  offsets[n] = static_cast<int>(columns.size());
  return offsets[n];
}
