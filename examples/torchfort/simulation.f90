! A TorchFort program in Fortran (`use torchfort`, nothing of ktr's), built and run on ktr: the periodic 1-D
! reaction-diffusion simulation of simulation.c trains its surrogate in situ on its own arrays in TorchFort's
! calling pattern (a default-integer device, `if (istat /= TORCHFORT_RESULT_SUCCESS) stop`, a real64 loss,
! default-integer checkpoint steps, W&B logging), checkpoints, reloads into a second model and predicts held-out
! steps. Fails unless the surrogate is at least 5x better than predicting the mean and the reloaded model agrees.
!   simulation_f config.yaml CHECKPOINT_DIR
program simulation
  use torchfort
  implicit none
  integer, parameter :: n = 128, steps = 96, campaigns = 8
  real :: u(n), x(3, n), y(1, n), pred(1, n), pred2(1, n)
  real(kind(1d0)) :: loss, se, sm, mean, diff
  integer :: istat, c, t, step_train, step_inference, trained
  character(len=256) :: config, dir

  call get_command_argument(1, config)
  call get_command_argument(2, dir)
  istat = torchfort_set_cudnn_benchmark(.true.)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
  istat = torchfort_create_model("surrogate", config, TORCHFORT_DEVICE_CPU)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
  trained = 0
  do c = 0, campaigns - 2
    call initial(c, u)
    do t = 1, steps
      call advance(u, x, y)
      istat = torchfort_train("surrogate", x, y, loss)
      if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
      trained = trained + 1
      istat = torchfort_wandb_log("surrogate", "loss", trained, loss)
    end do
  end do
  istat = torchfort_save_checkpoint("surrogate", dir)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
  istat = torchfort_create_model("reloaded", config, TORCHFORT_DEVICE_CPU)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
  istat = torchfort_load_checkpoint("reloaded", dir, step_train, step_inference)
  if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1

  se = 0; sm = 0; diff = 0
  call initial(campaigns - 1, u)
  do t = 1, steps
    call advance(u, x, y)
    istat = torchfort_inference("surrogate", x, pred)
    if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
    istat = torchfort_inference("reloaded", x, pred2)
    if (istat /= TORCHFORT_RESULT_SUCCESS) stop 1
    mean = sum(real(y, kind(1d0))) / n
    se = se + sum((real(pred, kind(1d0)) - y)**2)
    sm = sm + sum((mean - y)**2)
    diff = max(diff, maxval(abs(real(pred - pred2, kind(1d0)))))
  end do
  se = sqrt(se / (n * steps)); sm = sqrt(sm / (n * steps))
  print '(a, i0, a, i0, a, es10.3, a, es10.3, a, es9.2)', 'torchfort (Fortran): ', trained, &
    ' steps (checkpoint at step ', step_train, '), held-out RMS error ', se, ' vs ', sm, &
    ' for the mean; reloaded within ', diff
  if (se * 5 >= sm .or. diff /= 0 .or. step_train /= trained) stop 1

contains

  subroutine initial(c, u)
    integer, intent(in) :: c
    real, intent(out) :: u(n)
    integer :: i, j
    integer(8) :: s
    real :: a, k, p
    s = 12345 + 977 * c
    u = 0.3
    do j = 1, 3
      s = mod(s * 1103515245_8 + 12345_8, 4294967296_8)
      a = 0.15 + 0.1 * real(mod(s / 65536_8, 100_8)) / 100.0
      s = mod(s * 1103515245_8 + 12345_8, 4294967296_8)
      k = real(1 + mod(s / 65536_8, 4_8))
      s = mod(s * 1103515245_8 + 12345_8, 4294967296_8)
      p = 6.2831853 * real(mod(s / 65536_8, 100_8)) / 100.0
      do i = 1, n
        u(i) = u(i) + a * sin(k * 6.2831853 * real(i - 1) / n + p)
      end do
    end do
    u = max(u, 0.0)
  end subroutine

  ! One time step: x(3, n) samples (a point and its neighbours), y(1, n) targets; u advanced in place.
  subroutine advance(u, x, y)
    real, intent(inout) :: u(n)
    real, intent(out) :: x(3, n), y(1, n)
    integer :: i
    do i = 1, n
      x(1, i) = u(modulo(i - 2, n) + 1)
      x(2, i) = u(i)
      x(3, i) = u(modulo(i, n) + 1)
    end do
    y(1, :) = x(2, :) + 0.2 * (x(1, :) - 2 * x(2, :) + x(3, :)) + 0.05 * x(2, :) * (1 - x(2, :))
    u = y(1, :)
  end subroutine

end program simulation
